import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { Type } from "@sinclair/typebox";
import { canonicalJson, sha256Hex } from "../../src/lib/canonical-json.ts";
import { compileContract } from "../../src/release/contract.ts";
import { runsOf } from "../fixtures/releases/basic/lib/probe.ts";
import { dialects } from "../support/databases.ts";
import { mcpClient } from "../support/mcp-client.ts";
import { answerSchemas } from "../support/openapi-schemas.ts";
import { fixture, startTestServer, type TestServer } from "../support/server.ts";

const EXECUTION = "dev.service/execution";
const text = (result: unknown) => JSON.parse((result as { content: { text: string }[] }).content[0]?.text ?? "null");

describe("access in the contract", () => {
  const base = {
    name: "x.y",
    kind: "function" as const,
    description: "d",
    input: Type.Object({}),
    output: Type.Object({}),
  };

  test("the default access leaves the contract hash as it was before access existed", () => {
    const { contract } = compileContract({ ...base, access: "authenticated" });
    const before = sha256Hex(
      canonicalJson({ name: "x.y", kind: "function", input: contract.input, output: contract.output, files: [] }),
    );
    expect(contract.access).toBe("authenticated");
    expect(contract.contractHash).toBe(before);
  });

  test("service and rule access are part of the hash", () => {
    const open = compileContract({ ...base, access: "authenticated" }).contract;
    const service = compileContract({ ...base, access: "service" }).contract;
    const rule = compileContract({ ...base, access: () => true }).contract;
    expect(service.access).toBe("service");
    expect(rule.access).toBe("rule");
    expect(new Set([open.contractHash, service.contractHash, rule.contractHash]).size).toBe(3);
  });
});

for (const dialect of dialects) {
  describe(`access rules (${dialect.name})`, () => {
    let t: TestServer;
    let alice: string;
    let bob: string;
    let matches: Awaited<ReturnType<typeof answerSchemas>>;
    const logged: string[] = [];

    beforeAll(async () => {
      t = await startTestServer(dialect, { release: fixture("access"), log: (line) => logged.push(line) });
      alice = await t.userToken("admin-alice");
      bob = await t.userToken("bob");
      matches = await answerSchemas(t);
      const added = await t.invoke("members.add", { userId: "admin-alice", role: "admin" });
      expect(added.status).toBe(200);
    });
    afterAll(() => t.stop());

    const executionsOf = async (action: string) =>
      (await (await t.fetch(`/executions?action=${action}&limit=200`)).json()).items as { requestId: string }[];

    test("a user invoking a service-only action gets 403 access_denied; nothing is recorded and nothing runs", async () => {
      const requestId = crypto.randomUUID();
      const before = runsOf("admin.reset");
      const response = await t.invoke("admin.reset", {}, { requestId, token: bob });
      expect(response.status).toBe(403);
      const body = await response.json();
      expect(body).toMatchObject({ ok: false, error: "access_denied", requestId, executionId: null });
      expect(typeof body.message).toBe("string");
      expect(runsOf("admin.reset")).toBe(before);
      expect((await executionsOf("admin.reset")).some((e) => e.requestId === requestId)).toBe(false);
      expect((await t.fetch(`/executions/requests/${requestId}`, { token: bob })).status).toBe(404);
    });

    test("a refusal does not block a later allowed caller using the same requestId", async () => {
      const requestId = crypto.randomUUID();
      expect((await t.invoke("admin.reset", {}, { requestId, token: bob })).status).toBe(403);
      const allowed = await t.invoke("admin.reset", {}, { requestId });
      expect(allowed.status).toBe(200);
      expect((await allowed.json()).execution).toMatchObject({ status: "succeeded", requestId });
    });

    test("a rule decides per caller and reads data as that caller", async () => {
      const yes = await t.invoke("reports.read", { page: 1 }, { token: alice });
      expect(yes.status).toBe(200);
      expect((await yes.json()).execution).toMatchObject({ status: "succeeded", output: { page: 1 } });
      const no = await t.invoke("reports.read", { page: 1 }, { token: bob });
      expect(no.status).toBe(403);
      expect(await no.json()).toMatchObject({ ok: false, error: "access_denied", executionId: null });
      // Service keys act as administrators: every rule lets them through.
      expect((await t.invoke("reports.read", { page: 2 })).status).toBe(200);
    });

    test("access is checked before the idempotency lookup: a refused caller learns nothing of its earlier execution", async () => {
      const carol = await t.userToken("carol");
      const membership = await (await t.invoke("members.add", { userId: "carol", role: "admin" })).json();
      const requestId = crypto.randomUUID();
      const first = await t.invoke("reports.read", { page: 7 }, { requestId, token: carol });
      expect(first.status).toBe(200);
      await t.invoke("members.remove", { id: membership.execution.output.id });
      const replay = await t.invoke("reports.read", { page: 7 }, { requestId, token: carol });
      expect(replay.status).toBe(403);
      expect(await replay.json()).toMatchObject({ error: "access_denied", executionId: null, requestId });
      // Not REQUEST_CONFLICT either, which would tell that the id was used.
      const other = await t.invoke("reports.read", { page: 8 }, { requestId, token: carol });
      expect(other.status).toBe(403);
      // Bad input of a refused caller is refused for access, not validated.
      expect((await t.invoke("reports.read", { page: "x" }, { token: carol })).status).toBe(403);
    });

    test("a rule that throws refuses with 403 and is logged", async () => {
      const response = await t.invoke("broken.rule", {}, { token: alice });
      expect(response.status).toBe(403);
      expect(await response.json()).toMatchObject({ error: "access_denied" });
      expect(logged.some((line) => line.includes("broken.rule") && line.includes("the rule broke"))).toBe(true);
    });

    test("a workflow's access applies at admission", async () => {
      expect((await t.invoke("flows.nightly", {}, { token: alice })).status).toBe(403);
      const admitted = await t.invoke("flows.nightly", {});
      expect(admitted.status).toBe(202);
    });

    test("GET /actions lists the actions the caller may know of, with their access", async () => {
      expect((await t.fetch("/actions", { token: null })).status).toBe(401);
      const mine = await (await t.fetch("/actions", { token: bob })).json();
      const names = mine.items.map((a: { name: string }) => a.name).sort();
      expect(names).toEqual(["broken.rule", "public.ping", "reports.read"]);
      const read = mine.items.find((a: { name: string }) => a.name === "reports.read");
      const contract = await (await t.fetch("/actions/reports.read/contract", { token: bob })).json();
      matches(contract, "Contract");
      for (const item of mine.items) matches(item, "ActionSummary");
      expect(read).toEqual({
        name: "reports.read",
        kind: "function",
        description: "Reads the report (members with the admin role)",
        contractHash: contract.contractHash,
        access: "rule",
      });
      const all = await (await t.fetch("/actions")).json();
      expect(all.items.map((a: { name: string }) => a.name)).toEqual(
        expect.arrayContaining(["admin.reset", "admin.import", "members.add", "flows.nightly", "public.ping"]),
      );
      expect(all.items.find((a: { name: string }) => a.name === "flows.nightly")).toMatchObject({
        kind: "workflow",
        access: "service",
      });
    });

    test("the contract of a service-only action is 403 access_denied to a user and shows access to a service key", async () => {
      const refused = await t.fetch("/actions/admin.reset/contract", { token: bob });
      expect(refused.status).toBe(403);
      expect(await refused.json()).toMatchObject({ ok: false, error: "access_denied" });
      const shown = await (await t.fetch("/actions/admin.reset/contract")).json();
      matches(shown, "Contract");
      expect(shown.access).toBe("service");
      expect((await (await t.fetch("/actions/public.ping/contract", { token: bob })).json()).access).toBe(
        "authenticated",
      );
    });

    describe("over MCP", () => {
      let bobClient: Client;
      let serviceClient: Client;
      beforeAll(async () => {
        bobClient = await mcpClient(t, bob);
        serviceClient = await mcpClient(t, t.serviceKey);
      });
      afterAll(async () => {
        await bobClient.close();
        await serviceClient.close();
      });

      test("tools/list shows a user only the tools it may call (rule actions included); a service key all", async () => {
        const bobs = (await bobClient.listTools()).tools.map((tool) => tool.name);
        expect(bobs).toEqual(
          expect.arrayContaining(["public.ping", "reports.read", "broken.rule", "query", "describe"]),
        );
        for (const hidden of ["admin.reset", "admin.import", "members.add", "flows.nightly"]) {
          expect(bobs).not.toContain(hidden);
        }
        const services = (await serviceClient.listTools()).tools.map((tool) => tool.name);
        expect(services).toEqual(expect.arrayContaining(["admin.reset", "flows.nightly", "reports.read"]));
        const read = (await bobClient.listTools()).tools.find((tool) => tool.name === "reports.read");
        expect(read?._meta?.["dev.service/action"]).toEqual({
          kind: "function",
          access: "rule",
          action: "reports.read",
        });
      });

      test("calling a refused tool is a tool error access_denied naming no execution", async () => {
        for (const name of ["reports.read", "admin.reset", "admin.import"]) {
          const args = name === "reports.read" ? { page: 1 } : {};
          const result = await bobClient.callTool({ name, arguments: args });
          expect(result.isError).toBe(true);
          expect(text(result)).toMatchObject({ error: "access_denied" });
          expect(result._meta?.[EXECUTION]).toMatchObject({ id: null, status: "refused", url: null });
        }
        const allowed = await serviceClient.callTool({ name: "admin.reset", arguments: {} });
        expect(allowed.isError).toBeFalsy();
      });

      test("describe and the schema resource show each action's access, as the caller may know them", async () => {
        const described = text(await bobClient.callTool({ name: "describe", arguments: {} }));
        const byName = Object.fromEntries(
          described.actions.map((a: { name: string; access: string }) => [a.name, a.access]),
        );
        expect(byName).toEqual({ "broken.rule": "rule", "public.ping": "authenticated", "reports.read": "rule" });
        const resource = await serviceClient.readResource({ uri: "service://local/schema" });
        const schema = JSON.parse(String((resource.contents[0] as { text: string }).text));
        expect(schema.actions.find((a: { name: string }) => a.name === "members.add")).toMatchObject({
          access: "service",
        });
      });
    });
  });
}
