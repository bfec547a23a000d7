import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import SwaggerParser from "@apidevtools/swagger-parser";
import { dialects } from "../support/databases.ts";
import { openApiTypes } from "../support/openapi-types.ts";
import { scratchProject } from "../support/scratch.ts";
import { eventually, fixture, startTestServer, type TestServer } from "../support/server.ts";

const [sqlite] = dialects;

/** Routes the document leaves out, and why (`<METHOD> <path>` as Elysia lists them); the rest of the API is in it. */
const NOT_DOCUMENTED: [RegExp, string][] = [
  [/^OPTIONS /, "CORS preflights"],
  [/^GET \/$/, "a redirect to /console"],
  [/^GET \/openapi\.json$/, "the document itself"],
  [/^GET \/metrics$/, "Prometheus text, for scrapers"],
  [/^\w+ \/(\.well-known|oauth)\//, "OAuth discovery and the built-in sign-in, which OAuth clients find themselves"],
  [/^WS \/session$/, "a WebSocket (docs/API.md, Live queries)"],
  [/^(GET|PUT) \/storage\/signed\/:token$/, "reached through the URLs /storage/signed-*-url answer"],
  [/^POST \/mcp$/, "JSON-RPC: MCP clients read tools/list"],
];

describe("GET /openapi.json", () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer(sqlite as (typeof dialects)[number], { release: fixture("basic") });
  });
  afterAll(() => t?.stop());

  const documentFor = async (token?: string) => {
    const res = await t.fetch("/openapi.json", token === undefined ? {} : { token });
    expect(res.status).toBe(200);
    return res.json();
  };

  test("an OpenAPI 3.1 document of the active release that a real validator accepts", async () => {
    const doc = await documentFor();
    await SwaggerParser.validate(structuredClone(doc));
    expect(doc.openapi).toBe("3.1.0");
    expect(doc.info.version).toBe("t1");
    expect(doc.servers).toEqual([{ url: t.url }]);
    expect(doc.components.securitySchemes.bearer).toMatchObject({ type: "http", scheme: "bearer" });
    const invoke = doc.paths["/actions/test.echo/invoke"].post;
    expect(invoke.operationId).toBe("invoke_test_echo");
    expect(invoke.requestBody.content["application/json"].schema.properties.input).toMatchObject({
      type: "object",
      required: ["text"],
    });
    expect(invoke.responses["200"]).toBeDefined();
    expect(invoke.responses["401"]).toBeDefined();
    // Actions with file inputs take multipart too: the request part and the file fields, no other part.
    expect(doc.paths["/actions/test.attach/invoke"].post.requestBody.content["multipart/form-data"].schema).toEqual({
      type: "object",
      required: ["request", "picture"],
      properties: {
        request: { type: "string", description: "the JSON envelope { requestId, input }" },
        picture: { type: "string", format: "binary" },
        extra: { type: "string", format: "binary" },
      },
      additionalProperties: false,
    });
    expect(doc.paths["/sign-ins"].get.operationId).toBe("listSignIns");
    expect(doc.paths["/sign-ins/{id}"].delete.responses["404"]).toBeDefined();
    expect((await t.fetch("/openapi.json", { token: null })).status).toBe(401);
  });

  test("documents every route the server answers, except those left out on purpose", async () => {
    const doc = await documentFor();
    const missing = t.server.routes
      .map((route) => `${route.method} ${route.path}`)
      .filter((route) => !NOT_DOCUMENTED.some(([pattern]) => pattern.test(route)))
      .filter((route) => {
        const [method = "", path = ""] = route.split(" ");
        // Actions are documented one by one: /actions/:name/invoke is each action's.
        const documented = path.replace("/actions/:name/", "/actions/test.echo/").replace(/:(\w+)/g, "{$1}");
        return doc.paths[documented]?.[method.toLowerCase()] === undefined;
      });
    expect(missing).toEqual([]);
  });

  test("it follows the active release", async () => {
    const documents = async (version: string) => (await documentFor()).info.version === version;
    await t.publish(fixture("basic-v2"));
    await eventually(() => documents("t2"));
    await t.publish(fixture("basic"));
    await eventually(() => documents("t1"));
  });

  test("openapi-typescript + openapi-fetch make a typed client that calls the server; a wrong input does not compile", async () => {
    const doc = await documentFor();
    const project = scratchProject("openapi", "repository");
    try {
      project.write("src/api.d.ts", await openApiTypes(doc, project.dir));
      const client = `import createClient from "openapi-fetch";
import type { paths } from "./api";
const client = createClient<paths>({
  baseUrl: process.env.API_URL,
  headers: { authorization: \`Bearer \${process.env.API_TOKEN}\` },
});
`;
      project.write(
        "src/call.ts",
        `${client}const { data, error } = await client.POST("/actions/test.echo/invoke", {
  body: { requestId: crypto.randomUUID(), input: { text: "typed", n: 2 } },
});
if (error) throw new Error(JSON.stringify(error));
const output: { text: string; n?: number } | undefined = data.execution.output;
console.log(JSON.stringify({ status: data.execution.status, output }));
`,
      );
      const compiled = await project.tsc();
      expect(compiled.stdout + compiled.stderr).toBe("");
      expect(compiled.code).toBe(0);
      const called = await project.run(["bun", "src/call.ts"], { API_URL: t.url, API_TOKEN: t.serviceKey });
      expect(called.stderr).toBe("");
      expect(called.code).toBe(0);
      expect(JSON.parse(called.stdout)).toEqual({ status: "succeeded", output: { text: "typed", n: 2 } });

      project.write(
        "src/wrong.ts",
        `${client}await client.POST("/actions/test.echo/invoke", {
  body: { requestId: crypto.randomUUID(), input: { text: 42 } },
});
`,
      );
      const refused = await project.tsc();
      expect(refused.code).not.toBe(0);
      expect(refused.stdout + refused.stderr).toContain("wrong.ts");
    } finally {
      project.remove();
    }
  }, 60_000);

  test("GET /describe answers the MCP describe tool's document", async () => {
    const res = await t.fetch("/describe");
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body.release.version).toBe("t1");
    expect(body.actions.map((a: { name: string }) => a.name)).toContain("test.echo");
  });
});

describe("what a caller may know", () => {
  test("a user's document leaves out service-only actions; a service key's has them", async () => {
    const t = await startTestServer(sqlite as (typeof dialects)[number], { release: fixture("access") });
    try {
      const paths = async (token: string) =>
        Object.keys((await (await t.fetch("/openapi.json", { token })).json()).paths);
      const forService = await paths(t.serviceKey);
      const forUser = await paths(await t.userToken("ursula"));
      expect(forService).toContain("/actions/admin.reset/invoke");
      expect(forUser).not.toContain("/actions/admin.reset/invoke");
      expect(forUser).toContain("/executions");
    } finally {
      await t.stop();
    }
  });
});
