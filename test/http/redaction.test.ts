import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { dirname } from "node:path";
import { openGate } from "../fixtures/releases/basic/lib/probe.ts";
import { dialects, selectRows } from "../support/databases.ts";
import { LiveClient } from "../support/live-client.ts";
import { mcpClient } from "../support/mcp-client.ts";
import { eventually, fixture, startTestServer, type TestServer } from "../support/server.ts";

/** Unique per run, so a search of the database finds only what this suite wrote. */
const STRIPE = `sk_live_${crypto.randomUUID().replaceAll("-", "")}`;
const INNER = `inner-${crypto.randomUUID().slice(0, 8)}`;
const OUTER = `outer-${INNER}-end`;
const PLAINTEXTS = [STRIPE, INNER, OUTER];

const S = "[secret STRIPE_KEY]";

/** Set through the server's own engine, as `PUT /variables/{name}` does (sealed under its key). */
async function setSecrets(t: TestServer, secrets: Record<string, string>) {
  for (const [name, value] of Object.entries(secrets)) {
    await t.server.engine.variables.set({ kind: "service", id: "test" }, name, { value, secret: true }, "test");
  }
}

/** Fails naming the secret when `text` holds the plaintext of any. */
function expectNoPlaintext(text: string, where: string) {
  for (const secret of PLAINTEXTS) {
    if (text.includes(secret)) throw new Error(`${where} holds the plaintext of a secret (${secret.slice(0, 8)}…)`);
  }
}

const RETURNED = {
  plain: S,
  embedded: `Authorization: Bearer ${S}.`,
  twice: `${S}:${S}`,
  nested: { deep: [{ value: S }] },
  keyed: { [S]: "a key that is a secret" },
  both: "[secret OUTER_TOKEN] and [secret INNER_TOKEN]",
  region: "eu",
};

for (const dialect of dialects) {
  describe(`redaction of secrets (${dialect.name})`, () => {
    let t: TestServer;
    beforeAll(async () => {
      // WAIT_MS: the gated invocation answers `running` soon instead of holding the request.
      t = await startTestServer(dialect, { env: { WORKFLOW_POLL_MS: "50", WAIT_MS: "300" } });
      // Set before the release that requires them is published (it is refused otherwise).
      await setSecrets(t, { STRIPE_KEY: STRIPE, INNER_TOKEN: INNER, OUTER_TOKEN: OUTER });
      await t.publish(fixture("secrets"));
      await eventually(async () => (await t.fetch("/actions/vault.returns/contract")).status === 200);
    });
    afterAll(() => t.stop());

    const logsOf = async (id: string) => (await (await t.fetch(`/executions/${id}/logs?limit=200`)).json()).items;

    test("a returned secret is stored and answered redacted: invoke, GET, /result, a replay (the output schema saw the real value)", async () => {
      const requestId = crypto.randomUUID();
      const res = await t.invoke("vault.returns", {}, { requestId });
      const text = await res.text();
      expect(res.status).toBe(200);
      expectNoPlaintext(text, "the invoke's answer");
      const { execution } = JSON.parse(text);
      expect(execution).toMatchObject({ status: "succeeded", output: RETURNED });

      for (const path of [`/executions/${execution.id}`, `/executions/${execution.id}/result`]) {
        const read = await (await t.fetch(path)).text();
        expectNoPlaintext(read, path);
        expect(JSON.parse(read).output).toEqual(RETURNED);
      }
      const replay = await t.invoke("vault.returns", {}, { requestId });
      const replayed = await replay.text();
      expect(replay.status).toBe(200);
      expectNoPlaintext(replayed, "the replay");
      expect(JSON.parse(replayed).execution).toMatchObject({ id: execution.id, output: RETURNED });
    });

    test("logged secrets are redacted in the stored log and in the live stream", async () => {
      const gate = crypto.randomUUID();
      const { execution } = await (await t.invoke("vault.logs", { gate })).json();
      const client = await LiveClient.connect(t.url);
      try {
        client.send({ op: "init", "access-token": t.serviceKey });
        await client.op("init-ok");
        client.send({ op: "subscribe-stream", "execution-id": execution.id });
        // Subscribed (its first append) before the handler logs.
        expect(await client.op("stream-append")).toMatchObject({ status: "running" });
        openGate(gate);
        const streamed: string[] = [];
        for (;;) {
          const message = await client.next((m) => m.op === "stream-append");
          if (message.log !== undefined) streamed.push(message.log);
          if (message.done === true) break;
        }
        const lines = (await logsOf(execution.id)).map((l: { line: string }) => l.line);
        expect(lines).toEqual([
          `using ${S}`,
          `{"headers":{"authorization":"Bearer ${S}"},"${S}":1}`,
          `${S}${S} [secret OUTER_TOKEN] [secret INNER_TOKEN]`,
        ]);
        expect(streamed).toEqual(lines);
      } finally {
        client.close();
      }
    });

    test("a thrown secret is redacted in the error message and the log's last line", async () => {
      const { execution } = await (await t.invoke("vault.throws", {})).json();
      expect(execution).toMatchObject({
        status: "failed",
        errorMessage: `the charge was refused for key ${S} (inner [secret INNER_TOKEN])`,
      });
      const [last] = (await logsOf(execution.id)).slice(-1);
      expect(last.line).toStartWith(`the handler threw: Error: the charge was refused for key ${S} (inner`);
      expectNoPlaintext(JSON.stringify(await (await t.fetch(`/executions/${execution.id}`)).json()), "the failure");
    });

    test("a failure's last log line is redacted before it is cut to 16 KiB (no start of a secret is left)", async () => {
      // "the handler threw: Error: " and the padding put the secret across the cut at 16,384 bytes.
      const pad = 16_384 - "the handler threw: Error: ".length - 10;
      const { execution } = await (await t.invoke("vault.throws", { pad })).json();
      expect(execution.errorMessage).toBe(`${"x".repeat(pad)}${S}`);
      const [last] = (await logsOf(execution.id)).slice(-1);
      expect(last.line).toEndWith(`${"x".repeat(10)}${S.slice(0, 10)}…`);
      expect(last.line).not.toContain(STRIPE.slice(0, 8));
    });

    test("a workflow: the step's result (as the next code sees it too), its log, the run's output and error", async () => {
      const { runId } = await (await t.invoke("vault.flow", {})).json();
      const result = await (await t.fetch(`/executions/${runId}/result`)).json();
      expect(result).toMatchObject({ status: "succeeded", output: { fromStep: S, direct: `key ${S}` } });
      const run = await (await t.fetch(`/runs/${runId}`)).json();
      const text = JSON.stringify(run);
      expectNoPlaintext(text, "the run view");
      const fetch = run.steps.find((s: { name: string }) => s.name === "fetch");
      expect(fetch.output).toEqual({ key: S, nested: [{ [S]: "[secret OUTER_TOKEN]" }] });
      expect(fetch.logs.map((l: { line: string }) => l.line)).toEqual([`fetching with ${S}`]);

      const failing = await (await t.invoke("vault.flow", { fail: true })).json();
      const failed = await (await t.fetch(`/executions/${failing.runId}/result`)).json();
      expect(failed).toMatchObject({ status: "failed", errorMessage: `declined: ${S}` });
      const failedRun = await (await t.fetch(`/runs/${failing.runId}`)).json();
      expectNoPlaintext(JSON.stringify(failedRun), "the failed run");
      const charge = failedRun.steps.find((s: { name: string }) => s.name === "charge");
      expect(charge).toMatchObject({ status: "failed", error: `declined: ${S}` });
      expect(charge.logs.at(-1).line).toStartWith(`step "charge" attempt 1 threw: Error: declined: ${S}\n`);
    }, 20_000);

    test("MCP tools/call answers the redacted output", async () => {
      const client = await mcpClient(t, t.serviceKey);
      try {
        const result = await client.callTool({ name: "vault.returns", arguments: {} });
        expectNoPlaintext(JSON.stringify(result), "the MCP answer");
        expect(result.structuredContent).toEqual(RETURNED);
        const failed = await client.callTool({ name: "vault.throws", arguments: {} });
        expect(failed.isError).toBe(true);
        expectNoPlaintext(JSON.stringify(failed), "the MCP failure");
      } finally {
        await client.close();
      }
    });

    test("the database holds no plaintext of a secret (every table; the SQLite files byte by byte)", async () => {
      // After everything above: outputs, errors, logs, steps, runs, and the secrets themselves (sealed).
      await t.invoke("vault.logs", {});
      if (dialect.name === "sqlite") {
        const file = t.config.databaseUrl.replace(/^sqlite:/, "");
        const dir = dirname(file);
        for (const name of readdirSync(dir)) {
          expectNoPlaintext(readFileSync(`${dir}/${name}`).toString("latin1"), `the SQLite file ${name}`);
        }
        return;
      }
      const tables = await selectRows(
        t.config.databaseUrl,
        "select table_name from information_schema.tables where table_schema = 'public'",
      );
      expect(tables.length).toBeGreaterThan(5);
      for (const { table_name } of tables) {
        const rows = await selectRows(t.config.databaseUrl, `select t::text as row from "${table_name}" t`);
        expectNoPlaintext(rows.map((r) => r.row).join("\n"), `the table ${table_name}`);
      }
    });
  });
}
