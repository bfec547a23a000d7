import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createScopedKey } from "../../src/auth/scoped-keys.ts";
import { publishRelease } from "../../src/release/publish.ts";
import { openStore } from "../../src/store/open.ts";
import type { Store } from "../../src/store/store.ts";
import { cli, repoRoot, type ServerProcess, serve } from "../support/cli.ts";
import { dialects, type TestDatabase } from "../support/databases.ts";
import { freePort, haproxyPath, type LoadBalancer, runHaproxy } from "../support/haproxy.ts";
import { eventually, fixture } from "../support/server.ts";

/**
 * Hosting mode behind HAProxy, configured by the file docs/DEPLOY.md shows (deploy/haproxy/hosting.cfg),
 * TLS included: three instances (`bun src/cli/main.ts start`, SERVE_ENVIRONMENTS=!org:acme) serve
 * every environment but acme's, two more (org:acme) acme's, on one PostgreSQL database (several instances need
 * PostgreSQL: one SQLite file is one process's).
 */
const pg = dialects.find((d) => d.name === "postgres");
const CONFIG = join(repoRoot, "deploy", "haproxy", "hosting.cfg");
const KEY = `hosting-instances-key-${crypto.randomUUID()}`;
const RELEASE_POLL_MS = 250;
const SHARED = ["shared1", "shared2", "shared3"];
const ACME = ["acme1", "acme2"];

setDefaultTimeout(60_000);

// biome-ignore lint/suspicious/noExplicitAny: tests read answers' JSON freely
type Json = any;

/** A self-signed certificate for actuate.localhost and *.actuate.localhost: its PEM, and HAProxy's file (certificate + key). */
function wildcardCertificate(dir: string): { ca: string; haproxyPem: string } {
  const made = Bun.spawnSync(
    [
      "openssl",
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-subj",
      "/CN=actuate.localhost",
      "-addext",
      "subjectAltName=DNS:actuate.localhost,DNS:*.actuate.localhost",
      "-days",
      "2",
      "-keyout",
      join(dir, "key.pem"),
      "-out",
      join(dir, "cert.pem"),
    ],
    { stdout: "pipe", stderr: "pipe" },
  );
  if (made.exitCode !== 0) throw new Error(`openssl: ${made.stderr.toString()}`);
  const ca = readFileSync(join(dir, "cert.pem"), "utf8");
  const haproxyPem = join(dir, "haproxy.pem");
  writeFileSync(haproxyPem, ca + readFileSync(join(dir, "key.pem"), "utf8"));
  return { ca, haproxyPem };
}

/** Replaces `from` in `text`, which must hold it exactly once: the documented file and the test move together. */
function replaceOnce(text: string, from: string | RegExp, to: string): string {
  const count = typeof from === "string" ? text.split(from).length - 1 : (text.match(from) ?? []).length;
  if (count !== 1) throw new Error(`${CONFIG} should hold ${from} once, holds it ${count} times`);
  return text.replace(from, to);
}

/**
 * The documented configuration with this test's ports, certificate and instances' addresses, and a header
 * naming the server that answered (added after each `backend` line), so a test sees where a request went.
 */
function testedConfig(
  documented: string,
  options: { https: number; http: number; pem: string; servers: Record<string, string> },
): string {
  let config = replaceOnce(
    documented,
    /^ {2}bind :443 ssl crt \S+/m,
    `  bind 127.0.0.1:${options.https} ssl crt ${options.pem}`,
  );
  config = replaceOnce(config, /^ {2}bind :80$/m, `  bind 127.0.0.1:${options.http}`);
  const named = [...config.matchAll(/^ {2}server (\S+) \S+$/gm)].map((m) => m[1]);
  expect(named.sort()).toEqual(Object.keys(options.servers).sort());
  config = config.replace(/^ {2}server (\S+) \S+$/gm, (_, name: string) => `  server ${name} ${options.servers[name]}`);
  return config.replace(/^backend \S+$/gm, (line) => `${line}\n  http-response set-header x-served-by %s`);
}

test("docs/DEPLOY.md shows the configuration this file runs, as it is", () => {
  const deploy = readFileSync(join(repoRoot, "docs", "DEPLOY.md"), "utf8");
  expect(deploy).toContain(`\`\`\`haproxy\n${readFileSync(CONFIG, "utf8")}\`\`\`\n`);
});

describe.skipIf(!pg || !haproxyPath)("hosting mode: instances behind HAProxy as docs/DEPLOY.md configures it", () => {
  let database: TestDatabase;
  let store: Store;
  let dir: string;
  let ca: string;
  let https: number;
  let http: number;
  let balancer: LoadBalancer;
  const instances: Record<string, ServerProcess> = {};
  const keys: Record<string, string> = {};

  /** An environment's URL through the balancer (https, the test certificate). */
  const via = (handle: string) => `https://${handle}.actuate.localhost:${https}`;
  /** An instance's own address, for a host: the request skips the balancer. */
  const direct = (name: string, handle: string) =>
    `http://${handle}.actuate.localhost:${new URL((instances[name] as ServerProcess).url).port}`;

  const invoke = async (base: string, action = "test.version") => {
    const response = await fetch(`${base}/actions/${action}/invoke`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ requestId: crypto.randomUUID(), input: {} }),
      tls: { ca },
    });
    const body: Json = await response.json();
    return {
      status: response.status,
      body,
      release: body.execution?.output?.release as string | undefined,
      servedBy: response.headers.get("x-served-by"),
    };
  };

  beforeAll(async () => {
    database = await (pg as (typeof dialects)[number]).create();
    dir = mkdtempSync(join(tmpdir(), "actuate-hosting-instances-"));
    const dataDir = join(dir, "data");
    store = await openStore(database.url);
    const { organizations, environments } = store.control;
    const globex = await organizations.create("globex", Date.now());
    const acme = await organizations.create("acme", Date.now());
    const made: [string, number, string][] = [
      ["alpha", globex.id, "basic"],
      ["beta", globex.id, "basic-v2"],
      // globex's, though its name is acme-like: the balancer sends it to acme's instances, which refuse it.
      ["acme-lab", globex.id, "basic"],
      ["acme-prod", acme.id, "basic"],
    ];
    for (const [handle, organization, release] of made) {
      const { id } = await environments.create(handle, organization, Date.now());
      await publishRelease({
        store: store.environment(id),
        bundlesDir: join(dataDir, "bundles"),
        dir: fixture(release),
        whenTaken: "refuse",
      });
      keys[handle] = (await createScopedKey(store, { environment: id }, Date.now())).key;
    }

    const certificate = wildcardCertificate(dir);
    ca = certificate.ca;
    https = freePort();
    http = freePort();
    const env = {
      DATABASE_URL: database.url,
      DATA_DIR: dataDir,
      SERVICE_KEYS: KEY,
      SERVICE_URL: `https://actuate.localhost:${https}`,
      RELEASE_POLL_MS: String(RELEASE_POLL_MS),
      HANDLE: "main",
    };
    // Five processes start at once on a small shared machine: more than serve()'s usual 15 s to say they serve.
    const start = (name: string, serving: string) =>
      serve(["start"], { ...env, SERVE_ENVIRONMENTS: serving }, undefined, 45_000).then(
        (server): [string, ServerProcess] => [name, server],
      );
    const started = await Promise.all([
      ...SHARED.map((name) => start(name, "!org:acme")),
      ...ACME.map((name) => start(name, "org:acme")),
    ]);
    for (const [name, server] of started) instances[name] = server;
    const servers = Object.fromEntries(started.map(([name, server]) => [name, new URL(server.url).host]));
    const config = testedConfig(readFileSync(CONFIG, "utf8"), {
      https,
      http,
      pem: certificate.haproxyPem,
      servers,
    });
    balancer = await runHaproxy(config, `https://actuate.localhost:${https}`, { tls: { ca } });
  }, 120_000);

  afterAll(async () => {
    await balancer?.stop();
    for (const server of Object.values(instances)) await server.kill();
    await store?.close();
    await database?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test("invokes to two environments through the balancer reach every shared instance, each with its environment's release", async () => {
    const seen: Record<string, Set<string>> = { alpha: new Set(), beta: new Set() };
    for (let i = 0; i < 6; i++) {
      for (const [handle, release] of [
        ["alpha", "t1"],
        ["beta", "t2"],
      ] as const) {
        const answer = await invoke(via(handle));
        expect({ handle, status: answer.status, release: answer.release }).toEqual({ handle, status: 200, release });
        seen[handle]?.add(answer.servedBy as string);
      }
    }
    expect([...(seen.alpha as Set<string>)].sort()).toEqual(SHARED);
    expect([...(seen.beta as Set<string>)].sort()).toEqual(SHARED);
  });

  test("acme's hosts go to acme's instances only", async () => {
    const seen = new Set<string>();
    for (let i = 0; i < 6; i++) {
      const answer = await invoke(via("acme-prod"));
      expect({ status: answer.status, release: answer.release }).toEqual({ status: 200, release: "t1" });
      seen.add(answer.servedBy as string);
    }
    expect([...seen].sort()).toEqual(ACME);
  });

  test("an instance that does not serve an environment answers its host 421 JSON, and runs none of its code", async () => {
    for (const [name, handle] of [
      ["shared1", "acme-prod"],
      ["shared2", "acme-prod"],
      ["acme1", "alpha"],
      ["acme2", "beta"],
    ] as const) {
      const answer = await invoke(direct(name, handle));
      expect({ name, handle, status: answer.status, body: answer.body }).toEqual({
        name,
        handle,
        status: 421,
        body: { ok: false, error: "environment_not_served", message: expect.any(String) },
      });
    }
    // A globex environment whose name the balancer's rule takes for acme's reaches acme's instances: refused there.
    const misrouted = await invoke(via("acme-lab"));
    expect(misrouted.status).toBe(421);
    expect(misrouted.body.error).toBe("environment_not_served");
    expect(ACME).toContain(misrouted.servedBy as string);
  });

  test("a release published over HTTP through the balancer is served by every instance of its environment within the poll", async () => {
    const published = await cli(["release", "publish", fixture("basic-v2"), "--url", via("alpha")], {
      ACTUATE_TOKEN: keys.alpha as string,
      NODE_EXTRA_CA_CERTS: join(dir, "cert.pem"),
      DATA_DIR: join(dir, "cli"),
      DATABASE_URL: "postgres://nobody@127.0.0.1:1/unreachable",
    });
    expect(published.stderr).toBe("");
    expect(published.code).toBe(0);
    expect(published.stdout).toContain("release t2 published (was t1)");
    await Promise.all(
      SHARED.map((name) =>
        eventually(async () => (await invoke(direct(name, "alpha"))).release === "t2", RELEASE_POLL_MS * 4 + 3_000),
      ),
    );
    // Only alpha changed.
    expect((await invoke(via("acme-prod"))).release).toBe("t1");
    expect((await invoke(via("acme-lab"))).status).toBe(421);
  });

  test("TLS ends at the balancer: plain HTTP is redirected to https, the apex answers its health", async () => {
    const plain = await fetch(`http://alpha.actuate.localhost:${http}/actions`, { redirect: "manual" });
    expect(plain.status).toBe(301);
    expect(plain.headers.get("location")).toStartWith("https://alpha.actuate.localhost");
    const health = await fetch(`https://actuate.localhost:${https}/healthz`, { tls: { ca } });
    expect({ status: health.status, body: await health.json() }).toEqual({ status: 200, body: { ok: true } });
  });
});
