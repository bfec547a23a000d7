import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { hashSecret } from "../../src/auth/tokens.ts";
import { createLog, withFields } from "../../src/observe/log.ts";
import { type ServerProcess, serve } from "../support/cli.ts";
import { dialects } from "../support/databases.ts";
import { type HostingServer, startHostingServer } from "../support/hosting.ts";
import { eventually, fixture, type TestResponse } from "../support/server.ts";

type Line = Record<string, unknown>;

/** The server's JSON log lines so far (the CLI's own output, as the publish summary, is not JSON). */
const jsonLines = (output: string): Line[] =>
  output
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as Line);

describe("server log (a real `start` process, LOG_FORMAT=json)", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "actuate-logs-"));
  const serviceKey = `act_s_${crypto.randomUUID().replaceAll("-", "")}`;
  let server: ServerProcess;
  beforeAll(async () => {
    server = await serve(["start", "--release", fixture("basic")], {
      DATA_DIR: dataDir,
      DATABASE_URL: "",
      SERVICE_KEYS: serviceKey,
      LOG_FORMAT: "json",
      LOG_LEVEL: "info",
    });
  });
  afterAll(async () => {
    await server?.kill();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const invoke = (action: string, input: unknown, headers: Record<string, string> = {}): Promise<TestResponse> =>
    fetch(`${server.url}/actions/${action}/invoke`, {
      method: "POST",
      headers: { authorization: `Bearer ${serviceKey}`, "content-type": "application/json", ...headers },
      body: JSON.stringify({ requestId: crypto.randomUUID(), input }),
    });

  test("each request is one JSON line with level, time, instance, request id, caller kind, route, status, duration and execution", async () => {
    const from = server.output().length;
    const res = await invoke("test.echo", { text: "logged" }, { "x-request-id": "trace-me-42" });
    const { execution } = await res.json();
    await server.waitFor(new RegExp(`"executionId":"${execution.id}"`), 5_000, from);

    const lines = jsonLines(server.output());
    const instance = lines[0]?.instance;
    expect(typeof instance).toBe("string");
    for (const line of lines) {
      expect(["debug", "info", "warn", "error"]).toContain(line.level as string);
      expect(new Date(line.time as string).toISOString()).toBe(line.time as string);
      expect(line.instance).toBe(instance);
      expect(typeof line.msg).toBe("string");
    }
    const answered = lines.find((line) => line.executionId === execution.id);
    expect(answered).toMatchObject({
      level: "info",
      reqId: "trace-me-42",
      caller: "service",
      method: "POST",
      route: "/actions/:name/invoke",
      status: 200,
      requestId: execution.requestId,
    });
    expect(answered?.durationMs).toBeGreaterThanOrEqual(0);
    // Health checks are debug lines: not written at LOG_LEVEL=info.
    const beforeHealth = server.output().length;
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    const later = await (await invoke("test.echo", { text: "after the health check" })).json();
    await server.waitFor(new RegExp(`"executionId":"${later.execution.id}"`), 5_000, beforeHealth);
    expect(jsonLines(server.output().slice(beforeHealth)).map((line) => line.route)).toEqual(["/actions/:name/invoke"]);
  });

  test("a handler's throw is an error line naming the execution, with its stack", async () => {
    const from = server.output().length;
    const { execution } = await (await invoke("test.fail", { message: "it broke" })).json();
    await server.waitFor(/the handler threw/, 5_000, from);
    const threw = jsonLines(server.output().slice(from)).find((line) => String(line.msg).includes("the handler threw"));
    expect(threw).toMatchObject({ level: "error", executionId: execution.id, action: "test.fail" });
    expect(String(threw?.msg)).toContain("it broke");
    expect(String(threw?.msg)).toMatch(/\n\s+at /);
  });

  test("no line holds a credential or its hash, whether it was accepted or refused", async () => {
    const refusedToken = `act_s_${crypto.randomUUID().replaceAll("-", "")}`;
    const from = server.output().length;
    const refused = await fetch(`${server.url}/executions`, { headers: { authorization: `Bearer ${refusedToken}` } });
    expect(refused.status).toBe(401);
    await server.waitFor(/"route":"\/executions","status":401/, 5_000, from);
    const line = jsonLines(server.output().slice(from)).find((l) => l.route === "/executions");
    expect(line).toMatchObject({ status: 401 });
    expect(line?.caller).toBeUndefined();
    const output = server.output();
    for (const secret of [serviceKey, hashSecret(serviceKey), refusedToken, hashSecret(refusedToken)]) {
      expect(output).not.toContain(secret);
    }
  });
});

describe("createLog", () => {
  test("LOG_LEVEL drops what is less severe; a field that may hold a secret is redacted", () => {
    const written: string[] = [];
    const log = createLog({ level: "warn", format: "json" }, { instance: "i-1" }, (text) => written.push(text));
    log("quiet", { level: "info" });
    log("loud", { level: "warn", authorization: "Bearer abc", route: "/x" });
    expect(written).toHaveLength(1);
    expect(JSON.parse(written[0] as string)).toMatchObject({
      level: "warn",
      instance: "i-1",
      msg: "loud",
      authorization: "[redacted]",
      route: "/x",
    });
    // One level field, first; the time is now's, to the millisecond.
    const line = written[0] as string;
    expect(line).toStartWith('{"level":"warn","time":"');
    expect(line.match(/"level"/g)).toHaveLength(1);
    const time = Date.parse(JSON.parse(line).time);
    expect(Math.abs(Date.now() - time)).toBeLessThan(60_000);
  });

  test("withFields: a JSON log writes the added fields in every line's prefix; a pretty one with each line's", () => {
    const written: string[] = [];
    const json = withFields(
      createLog({ level: "info", format: "json" }, { instance: "i-1" }, (text) => written.push(text)),
      { environment: "acme-prod" },
    );
    json("one");
    json("two", { route: "/x" });
    expect(written.map((line) => JSON.parse(line))).toMatchObject([
      { instance: "i-1", environment: "acme-prod", msg: "one" },
      { instance: "i-1", environment: "acme-prod", msg: "two", route: "/x" },
    ]);
    expect(written[1]).toContain('"instance":"i-1","environment":"acme-prod","msg":"two"');

    const pretty: string[] = [];
    const readable = withFields(
      createLog({ level: "info", format: "pretty" }, { instance: "i-1" }, (text) => pretty.push(text)),
      { environment: "acme-prod" },
    );
    readable("three", { route: "/y" });
    expect(pretty[0]).toMatch(/ {2}three {2}environment=acme-prod route=\/y\n$/);
  });

  test("pretty lines read as time, level, message and fields", () => {
    const written: string[] = [];
    const log = createLog({ level: "debug", format: "pretty" }, { instance: "i-1" }, (text) => written.push(text));
    log("release v1 is live", { level: "info", actions: 3 });
    expect(written[0]).toMatch(/^\d\d:\d\d:\d\d\.\d{3} INFO {2}release v1 is live {2}actions=3\n$/);
  });
});

// Issue #41 §4: in hosting mode every line written on behalf of an environment names it.
for (const dialect of dialects) {
  describe(`server log in hosting mode (${dialect.name}, JSON lines captured)`, () => {
    const written: string[] = [];
    let h: HostingServer;
    beforeAll(async () => {
      h = await startHostingServer(dialect, {
        environments: [
          { handle: "a", organization: "acme", release: fixture("environments") },
          { handle: "b", organization: "beta", release: fixture("environments") },
        ],
        log: createLog({ level: "info", format: "json" }, { instance: "i-1" }, (text) => written.push(text)),
      });
    });
    afterAll(() => h?.stop());

    const lines = () => written.map((text) => JSON.parse(text) as Line);

    test("a request's line and a handler's error line carry the environment's handle", async () => {
      const inA = (await (await h.invoke("a", "env.whoami", { note: "logged" })).json()).execution;
      const failed = (await (await h.invoke("b", "env.put", { label: "x", id: crypto.randomUUID() })).json()).execution;
      expect(failed.status).toBe("failed");
      const answered = await eventually(
        () => lines().find((line) => line.executionId === inA.id && line.route) ?? null,
      );
      expect(answered).toMatchObject({ environment: "a", route: "/actions/:name/invoke", status: 200 });
      const threw = await eventually(
        () => lines().find((line) => line.executionId === failed.id && line.level === "error") ?? null,
      );
      expect(threw).toMatchObject({ environment: "b", action: "env.put" });
      const bRequest = await eventually(
        () => lines().find((line) => line.executionId === failed.id && line.route) ?? null,
      );
      expect(bRequest).toMatchObject({ environment: "b", status: 200 });
      // Every line of an environment's requests names one of the two.
      for (const line of lines().filter((l) => l.route !== undefined && l.route !== "/metrics")) {
        expect(["a", "b"]).toContain(line.environment as string);
      }
    });
  });
}
