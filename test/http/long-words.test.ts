import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { repoRoot, type ServerProcess, serve } from "../support/cli.ts";
import { eventually, fixture, type TestResponse } from "../support/server.ts";

const MiB = 1024 * 1024;
/** One word of 1 MiB, no space in it: a value pasted whole into an input that a handler's error repeats. */
const WORD = "w".repeat(MiB);

// Each server runs in its own process: a regex that blocks its event loop must not block the test's too.
let server: ServerProcess | undefined;
let dataDir: string | undefined;
const key = `long-words-${crypto.randomUUID()}`;
const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };

async function start(release: string) {
  dataDir = mkdtempSync(join(tmpdir(), "actuate-long-words-"));
  server = await serve(["start", "--release", release], { DATA_DIR: dataDir, DATABASE_URL: "", SERVICE_KEYS: key });
  return server.url;
}

afterEach(async () => {
  await server?.kill();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  server = undefined;
  dataDir = undefined;
});

/**
 * Asks /healthz again and again, each after the last answered, until `slow` settles: every one must be
 * answered. A server that spends its event loop on one request answers none of them meanwhile.
 */
async function beside<T>(url: string, slow: Promise<T>): Promise<T> {
  let settled = false;
  const done = slow.finally(() => {
    settled = true;
  });
  let answered = 0;
  while (!settled) {
    const health = await fetch(`${url}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ ok: true });
    answered++;
  }
  expect(answered).toBeGreaterThan(0);
  return done;
}

/** A JSON body whose shape the test asserts. */
const json = (response: Response) => (response as TestResponse).json();

const invoke = (url: string, action: string, input: unknown) =>
  fetch(`${url}/actions/${action}/invoke`, {
    method: "POST",
    headers,
    body: JSON.stringify({ requestId: crypto.randomUUID(), input }),
  });

// 128 KiB took 11 s on the quadratic pattern, so 1 MiB is minutes: these tests end only if the work is linear.
describe("a 1 MiB word in what release code throws", () => {
  test("a function's error over HTTP and over MCP: the execution fails with it whole, /healthz answers throughout", async () => {
    const url = await start(fixture("basic"));
    const overHttp = beside(url, invoke(url, "test.fail", { message: `no note ${WORD}` }).then(json));
    expect((await overHttp).execution).toMatchObject({
      status: "failed",
      errorCode: "action_failed",
      errorMessage: `no note ${WORD}`,
    });
    const overMcp = beside(
      url,
      fetch(`${url}/mcp`, {
        method: "POST",
        headers: { ...headers, accept: "application/json, text/event-stream" },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "tools/call",
          params: { name: "test.fail", arguments: { message: `no note ${WORD}` } },
        }),
      }).then(json),
    );
    const { result } = await overMcp;
    expect(result.isError).toBe(true);
    expect(JSON.parse(result.content[0].text)).toMatchObject({ error: "action_failed", message: `no note ${WORD}` });
  }, 60_000);

  test("a workflow step's error: the run fails with it whole, its log ends with the thrown line, /healthz answers throughout", async () => {
    const url = await start(fixture("workflows"));
    const { runId } = await json(await invoke(url, "wf.logged", { fail: WORD }));
    const run = await beside(
      url,
      eventually(async () => {
        const seen = await json(await fetch(`${url}/runs/${runId}`, { headers }));
        return seen.status === "failed" ? seen : null;
      }, 30_000),
    );
    expect(run.errorMessage).toBe(WORD);
    const finish = run.steps.find((step: { name: string }) => step.name === "finish");
    expect(finish.logs.at(-1).line).toStartWith(`step "finish" attempt 1 threw: Error: ${WORD.slice(0, 1000)}`);
  }, 60_000);

  test("the example release refuses such a note before its handler runs, and bounds every string input", async () => {
    const url = await start(join(repoRoot, "releases", "v1"));
    const form = new FormData();
    form.set("request", JSON.stringify({ requestId: crypto.randomUUID(), input: { note: WORD } }));
    form.set("file", new File(["hello"], "hello.txt", { type: "text/plain" }));
    const refused = await beside(
      url,
      fetch(`${url}/actions/docs.attach/invoke`, {
        method: "POST",
        headers: { authorization: headers.authorization },
        body: form,
      }).then(async (r) => ({ status: r.status, body: await json(r) })),
    );
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ ok: false, error: "action_contract_validation_failed" });
    expect(refused.body.details.issues.map((issue: { where: string }) => issue.where)).toEqual(["/input/note"]);

    const described = await json(await fetch(`${url}/describe`, { headers }));
    const unbounded: string[] = [];
    const visit = (schema: Record<string, unknown>, where: string) => {
      if (schema.type === "string" && typeof schema.maxLength !== "number") unbounded.push(where);
      for (const [name, property] of Object.entries(
        (schema.properties ?? {}) as Record<string, Record<string, unknown>>,
      ))
        visit(property, `${where}/${name}`);
    };
    for (const action of described.actions) visit(action.input, action.name);
    expect(unbounded).toEqual([]);
  }, 60_000);
});

// SQLite matches LIKE on the event loop, at up to the value's length × the pattern's: before the
// bounds, the first query here took about 50 s, during which the server answered nothing.
describe("a $like against a 1 MiB value", () => {
  test("a pattern past the budget is refused, one within it answered: /healthz answers throughout", async () => {
    const url = await start(fixture("data"));
    const added = await json(await invoke(url, "data.add-note", { title: "long", priority: 1, body: "a".repeat(MiB) }));
    expect(added.execution.status).toBe("succeeded");
    const query = (pattern: string) =>
      fetch(`${url}/query?format=objects`, {
        method: "POST",
        headers,
        body: JSON.stringify({ query: { notes: { $: { where: { body: { $like: pattern } } } } } }),
      }).then(async (r) => ({ status: r.status, body: await json(r) }));

    const refused = await beside(url, query(`%${"a".repeat(10 * 1024)}b`));
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ ok: false, error: "data_provider_rejected" });
    const answered = await beside(url, query(`%${"a".repeat(126)}b`));
    expect(answered).toEqual({ status: 200, body: { notes: [] } });
    expect((await beside(url, query(`${"a".repeat(127)}%`))).body.notes).toHaveLength(1);
  }, 30_000);
});
