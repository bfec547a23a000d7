import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { durationMs, loadConfig } from "../../src/config.ts";
import { SIGNAL_GRACE_MS } from "../../src/runtime/running.ts";
import { repoRoot } from "../support/cli.ts";
import { haproxyPath } from "../support/haproxy.ts";
import { checkNginx, nginxPath } from "../support/nginx.ts";

/**
 * The configurations shipped for N instances (deploy/), read as files: no container runtime here, so the
 * compose file is parsed and checked for what docs/DEPLOY.md promises of it; the balancers' files are
 * checked by the balancers themselves (`haproxy -c`, `nginx -t`) and for the settings the docs explain.
 * test/process/rolling-restart.test.ts runs the balancers' files.
 */
const deploy = (...path: string[]) => join(repoRoot, "deploy", ...path);
const HAPROXY = deploy("haproxy", "instances.cfg");
const NGINX = deploy("nginx", "instances.conf");
const COMPOSE = deploy("compose.instances.yaml");
const defaults = loadConfig({});
const WAIT_MS = defaults.waitMs;
// The drain's defaults (docs/DEPLOY.md, "Stopping"), and the time handlers still running get to store how
// they ended once their signal fired.
const DRAIN_READY_MS = defaults.drainReadyMs;
const DRAIN_MS = defaults.drainMs;
const ANSWER_MS = SIGNAL_GRACE_MS;
/** The port and DATA_DIR the image sets (deploy/Dockerfile's `ENV` line). */
const IMAGE = (() => {
  const env = readFileSync(deploy("Dockerfile"), "utf8").match(/^ENV (.*)$/m)?.[1] ?? "";
  const value = (name: string) => env.match(new RegExp(`\\b${name}=(\\S+)`))?.[1] as string;
  return { port: value("PORT"), dataDir: value("DATA_DIR") };
})();

// biome-ignore lint/suspicious/noExplicitAny: a parsed YAML document is read freely
type Yaml = any;

/** Every value of the directive `name` in a configuration's text (`name value…` lines, comments left out). */
const directives = (text: string, name: string): string[] =>
  [...text.matchAll(new RegExp(`^\\s*${name}\\s+([^#\\n]*?);?\\s*$`, "gm"))].map((m) => m[1] as string);

const only = (values: string[], what: string): string => {
  if (values.length !== 1) throw new Error(`${what}: expected once, found ${values.length} times`);
  return values[0] as string;
};

describe("deploy/compose.instances.yaml", () => {
  const compose: Yaml = Bun.YAML.parse(readFileSync(COMPOSE, "utf8"));
  const services: Record<string, Yaml> = compose.services;
  const instances = Object.entries(services).filter(([name]) => /^actuate\d+$/.test(name));
  const haproxyConfig = readFileSync(HAPROXY, "utf8");

  test("N instances, each with a data volume of its own at DATA_DIR", () => {
    expect(instances.length).toBeGreaterThanOrEqual(2);
    const volumes = instances.map(([name, service]) => {
      const mounts = (service.volumes as string[]).filter((v) => v.endsWith(`:${IMAGE.dataDir}`));
      expect({ name, mounts: mounts.length }).toEqual({ name, mounts: 1 });
      const volume = (mounts[0] as string).split(":")[0] as string;
      expect(Object.keys(compose.volumes)).toContain(volume);
      return volume;
    });
    expect(new Set(volumes).size).toBe(instances.length);
  });

  test("every instance is the same server on the same database, bucket and keys", () => {
    const [, first] = instances[0] as [string, Yaml];
    for (const [, service] of instances) {
      expect(service.build).toEqual({ context: "..", dockerfile: "deploy/Dockerfile" });
      expect(service.environment).toEqual(first.environment);
      expect(service.environment.DATABASE_URL).toStartWith("postgres://");
      expect(service.environment.STORAGE).toBe("s3");
      expect(service.depends_on).toMatchObject({ postgres: { condition: "service_healthy" } });
    }
  });

  test("health checks on /readyz, and a stop grace period above the longest stop", () => {
    for (const [name, service] of instances) {
      expect({ name, check: service.healthcheck.test }).toEqual({
        name,
        check: ["CMD-SHELL", expect.stringContaining("/readyz')")],
      });
      const grace = service.stop_grace_period as string;
      expect(grace).toMatch(/^\d+[smh]$/);
      expect(durationMs(grace)).toBeGreaterThan(DRAIN_READY_MS + DRAIN_MS + ANSWER_MS);
    }
  });

  test("HAProxy runs deploy/haproxy/instances.cfg, whose servers are the instances", () => {
    expect(services.haproxy.volumes).toContain("./haproxy/instances.cfg:/usr/local/etc/haproxy/haproxy.cfg:ro");
    const servers = [...haproxyConfig.matchAll(/^ {2}server (\S+) (\S+)$/gm)].map((m) => [m[1], m[2]]);
    expect(servers).toEqual(instances.map(([name]) => [name, `${name}:${IMAGE.port}`]));
    expect([...services.haproxy.depends_on].sort()).toEqual(instances.map(([name]) => name).sort());
    // Only the balancer is published.
    for (const [, service] of instances) expect(service.ports).toBeUndefined();
    const published = (services.haproxy.ports as string[])[0] as string;
    expect(instances.every(([, s]) => s.environment.PUBLIC_URL.includes(`:${published.split(":")[0]}`))).toBe(true);
  });
});

describe("deploy/haproxy/instances.cfg", () => {
  const text = readFileSync(HAPROXY, "utf8");
  const timeout = (name: string) => durationMs(only(directives(text, `timeout ${name}`), `timeout ${name}`));

  test.skipIf(!haproxyPath)("haproxy -c accepts it", () => {
    const checked = Bun.spawnSync([haproxyPath as string, "-c", "-f", HAPROXY], { stdout: "pipe", stderr: "pipe" });
    expect({ code: checked.exitCode, output: checked.stderr.toString() }).toEqual({
      code: 0,
      output: expect.not.stringContaining("[ALERT]"),
    });
  });

  test("answers wait longer than WAIT_MS, WebSockets an hour", () => {
    expect(timeout("server")).toBeGreaterThan(WAIT_MS);
    expect(timeout("client")).toBeGreaterThan(WAIT_MS);
    expect(timeout("tunnel")).toBeGreaterThanOrEqual(3_600_000);
  });

  test("checks /readyz, often enough to take a draining instance out within DRAIN_READY_MS", () => {
    expect(only(directives(text, "option httpchk"), "httpchk")).toBe("GET /readyz");
    const [, inter, fall] = only(directives(text, "default-server"), "default-server").match(
      /\binter (\d+[smh]) fall (\d+)\b/,
    ) as string[];
    expect(durationMs(inter as string) * Number(fall) + timeout("check")).toBeLessThan(DRAIN_READY_MS);
  });

  test("retries on another server: any request whose connection failed, an answerless one only if repeatable", () => {
    expect(only(directives(text, "retries"), "retries")).toBe("3");
    expect(only(directives(text, "option redispatch"), "redispatch")).toBe("1");
    expect(only(directives(text, "retry-on"), "retry-on")).toBe("conn-failure empty-response");
    expect(only(directives(text, "http-request disable-l7-retry"), "disable-l7-retry")).toBe(
      "unless repeatable or invoke",
    );
    expect(only(directives(text, "acl invoke"), "acl invoke")).toBe("path_reg ^/actions/[^/]+/invoke$");
    expect(only(directives(text, "acl repeatable"), "acl repeatable")).toBe("method GET HEAD");
  });
});

describe("deploy/nginx/instances.conf", () => {
  const text = readFileSync(NGINX, "utf8");

  test.skipIf(!nginxPath)("nginx -t accepts it in an http block", () => {
    expect(checkNginx(text)).toEqual({ code: 0, output: expect.stringContaining("test is successful") });
  });

  test("answers wait longer than WAIT_MS, /session an hour", () => {
    const [general, session] = directives(text, "proxy_read_timeout").map(durationMs);
    expect(general).toBeGreaterThan(WAIT_MS);
    expect(text).toMatch(/location = \/session \{\n\s+proxy_read_timeout 1h;\n\s+proxy_send_timeout 1h;/);
    expect(session).toBe(3_600_000);
    expect(only(directives(text, "proxy_set_header Connection"), "Connection")).toBe("$actuate_connection");
  });

  test("passive health: every server out after a failure, for a while; retries on the next", () => {
    const servers = directives(text, "server").filter((s) => /^\S+:\d+ /.test(s));
    expect(servers.length).toBeGreaterThanOrEqual(2);
    for (const server of servers) expect(server).toMatch(/ max_fails=1 fail_timeout=\d+s$/);
    expect(directives(text, "proxy_next_upstream")).toEqual(["error timeout", "error timeout non_idempotent"]);
    // A POST is sent again after it reached an instance only where it is an invoke (a requestId in it).
    expect(text).toMatch(
      /location ~ \^\/actions\/\[\^\/\]\+\/invoke\$ \{\n\s+proxy_request_buffering on;\n\s+proxy_next_upstream error timeout non_idempotent;/,
    );
  });
});

test("docs/DEPLOY.md shows both balancers' files as they are", () => {
  const docs = readFileSync(join(repoRoot, "docs", "DEPLOY.md"), "utf8");
  expect(docs).toContain(`\`\`\`haproxy\n${readFileSync(HAPROXY, "utf8")}\`\`\`\n`);
  expect(docs).toContain(`\`\`\`nginx\n${readFileSync(NGINX, "utf8")}\`\`\`\n`);
});
