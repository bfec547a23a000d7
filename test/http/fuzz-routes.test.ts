import { expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Route } from "../../src/http/methods.ts";
import { cli, type ServerProcess, serve } from "../support/cli.ts";
import { canMakeClusters, privateCluster } from "../support/cluster.ts";
import { type Dialect, dialects, type TestDatabase } from "../support/databases.ts";
import {
  type Answer,
  casesFor,
  FRESH,
  type FuzzCase,
  MiB,
  problemWith,
  type Server,
  socketCases,
  type Template,
  upgradeCases,
} from "../support/fuzz-cases.ts";
import { LiveClient } from "../support/live-client.ts";
import { beginSignIn, csrfOf, formAction, REDIRECT } from "../support/oauth-client.ts";
import { eventually, fixture, startTestServer } from "../support/server.ts";

/**
 * The issue #46 closing proof: every route the server answers, each string of a well-formed request to
 * it replaced in turn by a long word (1 MiB in bodies, socket messages and MCP arguments; as long as a
 * request's head takes in paths, query strings and headers), bodies nested past every depth limit or
 * chunked past every size limit, malformed Host headers; then the same while the database is stopped and
 * started again. The server runs in its own process: its event loop, its crash and its log are its own.
 */

const key = `fuzz-key-${crypto.randomUUID()}`;
const env = (dataDir: string, databaseUrl: string) => ({
  DATA_DIR: dataDir,
  DATABASE_URL: databaseUrl,
  SERVICE_KEYS: key,
  // Below the chunked bodies' size, so that every body limit is passed.
  MAX_FILE_BYTES: String(4 * MiB),
  MAX_MULTIPART_BYTES: String(6 * MiB),
  // The access lines of /healthz, /readyz and /metrics are debug: they show those routes were reached.
  LOG_LEVEL: "debug",
});

/** Every route the app registers (read from a server in this process: the fuzzed one runs in its own). */
async function appRoutes(): Promise<readonly Route[]> {
  const t = await startTestServer(dialects[0] as Dialect, { release: fixture("fuzz") });
  try {
    return t.server.routes;
  } finally {
    await t.stop();
  }
}

/** What the cases refer to: a record of each kind, made by ordinary requests before the fuzz. */
interface Seeds {
  executionId: string;
  requestId: string;
  runId: string;
  scheduledId: string;
  noteId: string;
  uploadToken: string;
  downloadToken: string;
  clientId: string;
  /** The environment's MCP resources are named under it. */
  handle: string;
  /** A sign-in page the authority opened, its cookies and its form's token. */
  signIn: { page: string; action: string; cookie: string; csrf: string };
}

async function seed(url: string, user: string): Promise<Seeds> {
  const call = async (path: string, init: RequestInit & { token?: string } = {}) => {
    const headers = new Headers(init.headers);
    headers.set("authorization", `Bearer ${init.token ?? key}`);
    const response = await fetch(`${url}${path}`, { ...init, headers });
    expect(response.ok, path).toBe(true);
    // biome-ignore lint/suspicious/noExplicitAny: the answers' fields are read freely
    return (await response.json()) as any;
  };
  const invoke = (action: string, input: unknown, token = key) =>
    call(`/actions/${action}/invoke`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ requestId: crypto.randomUUID(), input }),
      token,
    });
  const echoed = await invoke("fuzz.echo", { text: "seed" });
  const flow = await invoke("fuzz.flow", { text: "seed" });
  const note = await invoke("fuzz.note", { title: "seed", body: "seed" }, user);
  const later = await invoke("fuzz.later", { text: "seed" });
  await call("/storage/upload", { method: "PUT", headers: { path: "fuzz/upload.txt" }, body: "hello" });
  const upload = await call("/storage/signed-upload-url", {
    method: "POST",
    body: JSON.stringify({ path: "fuzz/signed.txt", contentType: "text/plain" }),
  });
  const download = await call("/storage/signed-download-url?filename=fuzz/upload.txt");
  const tokenOf = (signed: string) => signed.split("/storage/signed/")[1] as string;
  const { handle } = await call("/describe");

  const { authorizationUrl, provider } = await beginSignIn(url, "fuzz");
  const sent = await fetch(authorizationUrl, { redirect: "manual" });
  const cookie = sent.headers
    .getSetCookie()
    .map((line) => line.split(";")[0])
    .join("; ");
  const page = new URL(sent.headers.get("location") as string, url).toString();
  const html = await (await fetch(page, { headers: { cookie } })).text();
  return {
    executionId: echoed.execution.id,
    requestId: echoed.execution.requestId,
    runId: flow.runId,
    scheduledId: later.execution.output.id,
    noteId: note.execution.output.id,
    uploadToken: tokenOf(upload.url),
    downloadToken: tokenOf(download.url),
    clientId: provider.client?.client_id as string,
    handle,
    signIn: {
      page: new URL(page).pathname,
      action: new URL(formAction(html, page)).pathname,
      cookie,
      csrf: csrfOf(html),
    },
  };
}

const MCP_HEADERS = { accept: "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25" };
const MODERN = "2026-07-28";
const modernMeta = {
  "io.modelcontextprotocol/protocolVersion": MODERN,
  "io.modelcontextprotocol/clientCapabilities": {},
};
const rpc = (method: string, params: unknown) => ({ jsonrpc: "2.0", id: 1, method, params });
const QUERY = {
  notes: {
    $: {
      where: { title: { $like: "s%" }, or: [{ body: { $ilike: "%e%" } }, { "parent.title": "seed" }] },
      limit: 5,
      order: { title: "asc" },
    },
    parent: {},
    children: { $: { limit: 2 } },
  },
};

/** Well-formed requests to a route: those of the table below, or the route as it is with its parameters filled. */
function templatesFor(route: Route, s: Seeds): Template[] {
  const at = `${route.method} ${route.path}`;
  const invoke = (action: string, input: unknown): Template => ({
    method: "POST",
    route: route.path,
    path: `/actions/${action}/invoke`,
    body: { kind: "json", value: { requestId: FRESH, input } },
    bodyLimit: 8 * MiB,
  });
  const mcp = (message: unknown, headers: Record<string, string> = {}): Template => ({
    method: "POST",
    route: route.path,
    path: "/mcp",
    headers: { ...MCP_HEADERS, ...headers },
    body: { kind: "json", value: message },
    bodyLimit: 8 * MiB,
  });
  const modern = (method: string, params: Record<string, unknown>, name?: string) =>
    mcp(rpc(method, { ...params, _meta: modernMeta }), {
      "mcp-protocol-version": MODERN,
      "mcp-method": method,
      ...(name ? { "mcp-name": name } : {}),
    });
  const oauth = (method: string, path: string, body?: Record<string, string>, extra: Partial<Template> = {}) => ({
    method,
    route: route.path,
    path,
    ...(body ? { body: { kind: "form" as const, fields: body }, bodyLimit: 64 * 1024 } : {}),
    ...extra,
  });
  switch (at) {
    case "POST /actions/:name/invoke":
      return [
        invoke("fuzz.echo", { text: "hello", n: 1 }),
        invoke("fuzz.fail", { message: "no" }),
        invoke("fuzz.note", { title: "t", body: "b", tags: ["x"], parentId: s.noteId }),
        invoke("fuzz.later", { text: "x" }),
        invoke("fuzz.flow", { text: "x" }),
        {
          method: "POST",
          route: route.path,
          path: "/actions/fuzz.attach/invoke",
          body: {
            kind: "multipart",
            parts: [
              {
                name: "request",
                contentType: "application/json",
                content: JSON.stringify({ requestId: FRESH, input: { note: "n" } }),
              },
              { name: "file", filename: "a.txt", contentType: "text/plain", content: "hello" },
            ],
          },
          bodyLimit: 6 * MiB,
        },
      ];
    case "POST /mcp":
      return [
        mcp(rpc("tools/call", { name: "fuzz.echo", arguments: { text: "hi", n: 2 } })),
        mcp(rpc("tools/call", { name: "query", arguments: { query: QUERY } })),
        mcp(rpc("tools/call", { name: "describe", arguments: {} })),
        mcp(rpc("tools/call", { name: "fuzz.note", arguments: { title: "t", tags: ["a"] } })),
        mcp(rpc("tools/call", { name: "fuzz.attach", arguments: { note: "n" } })),
        mcp(rpc("resources/read", { uri: `service://${s.handle}/runs/${s.runId}` })),
        mcp(rpc("resources/read", { uri: `service://${s.handle}/schema` })),
        mcp(
          rpc("initialize", {
            protocolVersion: "2025-11-25",
            capabilities: {},
            clientInfo: { name: "f", version: "1" },
          }),
        ),
        modern("tools/call", { name: "fuzz.echo", arguments: { text: "hi" } }, "fuzz.echo"),
        modern("tasks/get", { taskId: "task" }),
        modern("server/discover", {}),
      ];
    case "POST /query":
      return ["/query", "/query?format=objects"].map((path) => ({
        method: "POST",
        route: route.path,
        path,
        body: { kind: "json", value: { query: QUERY } },
        bodyLimit: 4 * MiB,
      }));
    case "POST /storage/signed-upload-url":
      return [
        {
          method: "POST",
          route: route.path,
          path: route.path,
          body: { kind: "json", value: { path: "fuzz/signed.txt", contentType: "text/plain", expiresIn: 60 } },
          bodyLimit: MiB,
        },
      ];
    case "PUT /storage/upload":
      return [
        {
          method: "PUT",
          route: route.path,
          path: route.path,
          headers: { path: "fuzz/upload.txt" },
          body: { kind: "bytes", text: "hello", contentType: "text/plain" },
          bodyLimit: 4 * MiB,
        },
      ];
    case "PUT /storage/signed/:token":
      return [
        {
          method: "PUT",
          route: route.path,
          path: `/storage/signed/${s.uploadToken}`,
          body: { kind: "bytes", text: "hello", contentType: "text/plain" },
          bodyLimit: 4 * MiB,
        },
      ];
    case "POST /oauth/register":
      return [
        {
          method: "POST",
          route: route.path,
          path: route.path,
          body: {
            kind: "json",
            value: {
              client_name: "fuzz",
              redirect_uris: [REDIRECT],
              grant_types: ["authorization_code", "refresh_token"],
              response_types: ["code"],
              token_endpoint_auth_method: "none",
            },
          },
          bodyLimit: 64 * 1024,
        },
      ];
    case "ALL /oauth/*":
      return [
        oauth(
          "GET",
          `/oauth/authorize?${new URLSearchParams({
            client_id: s.clientId,
            redirect_uri: REDIRECT,
            response_type: "code",
            code_challenge: "c".repeat(43),
            code_challenge_method: "S256",
            state: "s",
          })}`,
        ),
        oauth("POST", "/oauth/token", {
          grant_type: "authorization_code",
          code: "abc",
          redirect_uri: REDIRECT,
          client_id: s.clientId,
          code_verifier: "v".repeat(43),
        }),
        oauth("POST", "/oauth/token", { grant_type: "refresh_token", refresh_token: "r", client_id: s.clientId }),
        oauth("POST", "/oauth/revoke", { token: "t", client_id: s.clientId }),
        oauth("GET", "/oauth/jwks"),
        oauth("GET", s.signIn.page, undefined, { headers: { cookie: s.signIn.cookie } }),
        oauth(
          "POST",
          s.signIn.action,
          { csrf: s.signIn.csrf, user: "nobody", password: "wrong" },
          { headers: { cookie: s.signIn.cookie }, bodyLimit: 16 * 1024 },
        ),
      ];
  }
  const params: Record<string, string> = {
    name: "fuzz.echo",
    requestId: s.requestId,
    version: "f1",
    token: route.method === "PUT" ? s.uploadToken : s.downloadToken,
  };
  const idOf = (path: string) =>
    path.startsWith("/runs")
      ? s.runId
      : path.startsWith("/scheduled")
        ? s.scheduledId
        : path.startsWith("/executions")
          ? s.executionId
          : crypto.randomUUID();
  const path = route.path.replace(/:(\w+)/g, (_, name: string) =>
    name === "id" ? idOf(route.path) : (params[name] ?? "x"),
  );
  const query: Record<string, string> = {
    "GET /storage/signed-download-url": "?filename=fuzz/upload.txt",
    "DELETE /storage/files": "?filename=fuzz/gone.txt",
    "GET /storage/files": "?prefix=fuzz/&limit=5",
    "GET /stats": "?window=1h",
  };
  const method = route.method === "ALL" || route.method === "WS" ? "GET" : route.method;
  return [{ method, route: route.path, path: `${path}${query[at] ?? ""}` }];
}

type OpenApi = { paths: Record<string, Record<string, { parameters?: { in: string; name: string }[] }>> };

/** The query parameters /openapi.json documents for a route (none for those it leaves out). */
function documentedParams(openapi: OpenApi, route: Route): string[] {
  const operation = openapi.paths[route.path.replace(/:(\w+)/g, "{$1}")]?.[route.method.toLowerCase()];
  return (operation?.parameters ?? []).filter((p) => p.in === "query").map((p) => p.name);
}

/** `/session` messages of each kind; socketCases varies each of their strings and their depth. */
const socketMessages = (s: Seeds, token: string) => [
  { "client-event-id": "init", op: "init", "access-token": token },
  { "client-event-id": "add", op: "add-query", "return-type": "tree", q: QUERY },
  { "client-event-id": "remove", op: "remove-query", q: QUERY },
  { "client-event-id": "stream", op: "subscribe-stream", "after-seq": -1, "execution-id": s.executionId },
  { "client-event-id": "write", op: "transact", "tx-steps": [["add-triple", "a", "b", "c"]] },
];

interface Fuzzed {
  server: ServerProcess;
  cases: FuzzCase[];
  routes: readonly Route[];
  sockets: LiveClient[];
}

/** Starts the server on `databaseUrl`, seeds it and makes the cases for every route. */
async function fuzzed(dataDir: string, databaseUrl: string, routes: readonly Route[]): Promise<Fuzzed> {
  const variables = env(dataDir, databaseUrl);
  const user =
    (await cli(["token", "create", "--user", "fuzz-user"], variables)).stdout.trim().split("\n").at(-1) ?? "";
  const server = await serve(["start", "--release", fixture("fuzz")], variables);
  const target: Server = { url: server.url, port: Number(new URL(server.url).port) };
  const seeds = await seed(server.url, user);
  const described = await fetch(`${server.url}/openapi.json`, { headers: { authorization: `Bearer ${key}` } });
  const openapi = (await described.json()) as OpenApi;
  // The console's page is a route Bun serves itself (http/console.ts), outside the app's list.
  const groups = [...routes, { method: "GET", path: "/console" }].map((route) =>
    casesFor(target, templatesFor(route, seeds), [key, user], documentedParams(openapi, route)),
  );
  // A socket signed in by its upgrade's header, and one by its init message.
  const byHeader = await LiveClient.connect(server.url, { authorization: `Bearer ${key}` });
  const byInit = await LiveClient.connect(server.url);
  byHeader.send({ op: "init" });
  byInit.send({ op: "init", "access-token": user });
  await Promise.all([byHeader.op("init-ok", 20_000), byInit.op("init-ok", 20_000)]);
  const sockets = [byHeader, byInit];
  groups.push(
    upgradeCases(target, key),
    socketCases(byHeader, socketMessages(seeds, key)),
    socketCases(byInit, socketMessages(seeds, user)),
  );
  return { server, cases: interleaved(groups), routes, sockets };
}

/** One case of each group in turn, so that any stretch of the run (an outage) reaches every route. */
function interleaved(groups: FuzzCase[][]): FuzzCase[] {
  const longest = Math.max(...groups.map((g) => g.length));
  return Array.from({ length: longest }, (_, i) =>
    groups.flatMap((g) => (i < g.length ? [g[i] as FuzzCase] : [])),
  ).flat();
}

/** The server's JSON log lines. */
const logLines = (text: string) =>
  text.split("\n").flatMap((line) => {
    try {
      const parsed = JSON.parse(line);
      return typeof parsed?.msg === "string"
        ? [parsed as Record<string, unknown> & { msg: string; level: string }]
        : [];
    } catch {
      return [];
    }
  });

/**
 * Sends every case (`workers` at a time) and notes each problem: an answer the server may not give,
 * the process gone, `/healthz` not answering 200 (asked after every 25 answers).
 */
async function send(f: Fuzzed, cases: FuzzCase[], problems: string[], outage: () => boolean, workers = 1) {
  let next = 0;
  let answered = 0;
  const worker = async () => {
    while (next < cases.length && f.server.proc.exitCode === null) {
      const c = cases[next++] as FuzzCase;
      const during = outage();
      const answer: Answer = await c.send();
      const problem = problemWith(c, answer, during || outage());
      if (problem) problems.push(problem);
      if (++answered % 25 === 0) await health(f, problems);
    }
  };
  await Promise.all(Array.from({ length: workers }, worker));
  if (f.server.proc.exitCode !== null) problems.push(`the server exited (${f.server.proc.exitCode})`);
  await health(f, problems);
}

async function health(f: Fuzzed, problems: string[]) {
  const answer = await fetch(`${f.server.url}/healthz`).catch((error) => error as Error);
  if (answer instanceof Error || answer.status !== 200) problems.push(`/healthz: ${String(answer)}`);
}

/**
 * What the server logged that it should not have: a bug, a statement's parameters, any error but an
 * action's own failure (the fixture's fuzz.fail throws) and, during an outage, a 503's access line.
 */
function logProblems(output: string, outageAllowed: boolean): string[] {
  return logLines(output)
    .filter(
      (line) =>
        line.msg.includes("unhandled error") ||
        JSON.stringify(line).includes("params:") ||
        (line.level === "error" && line.action === undefined && !(outageAllowed && line.status === 503)),
    )
    .map((line) => `log: ${JSON.stringify(line).slice(0, 500)}`);
}

/** Routes no case reached, by the server's access lines (`route` is the template a request matched). */
function unreached(output: string, routes: readonly Route[]): string[] {
  const reached = new Set(logLines(output).map((line) => `${line.method} ${line.route}`));
  return routes
    .filter(
      (r) =>
        ![...reached].some(
          (seen) =>
            seen.endsWith(` ${r.path}`) && (r.method === "ALL" || r.method === "WS" || seen.startsWith(`${r.method} `)),
        ),
    )
    .map((r) => `${r.method} ${r.path}`);
}

async function cleanUp(f: Fuzzed | undefined) {
  for (const socket of f?.sockets ?? []) socket.close();
  await f?.server.kill();
}

for (const dialect of dialects) {
  test(`fuzz (${dialect.name}): every route, long words in every string, deep and oversized bodies, bad Hosts: no 5xx, every error JSON with ok:false, the process alive, nothing in the log`, async () => {
    const routes = await appRoutes();
    const database: TestDatabase = await dialect.create();
    const dataDir = mkdtempSync(join(tmpdir(), "actuate-fuzz-routes-"));
    let f: Fuzzed | undefined;
    try {
      f = await fuzzed(dataDir, database.url, routes);
      const problems: string[] = [];
      await send(f, f.cases, problems, () => false);
      problems.push(...logProblems(f.server.output(), false));
      expect(problems).toEqual([]);
      expect(unreached(f.server.output(), routes)).toEqual([]);
      expect(f.sockets.map((s) => s.closed)).toEqual([null, null]);
    } finally {
      await cleanUp(f);
      await database.drop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 300_000);
}

test.skipIf(!canMakeClusters)(
  "fuzz through a PostgreSQL outage: only 503 database_unavailable while the database is away, no 5xx once it is back, the process alive throughout",
  async () => {
    const routes = await appRoutes();
    const cluster = privateCluster();
    const dataDir = mkdtempSync(join(tmpdir(), "actuate-fuzz-outage-"));
    let f: Fuzzed | undefined;
    try {
      f = await fuzzed(dataDir, cluster.url, routes);
      const problems: string[] = [];
      let outage = false;
      let answered = 0;
      let unavailable = 0;
      const counted = f.cases.map((c) => ({
        ...c,
        send: async () => {
          const answer = await c.send();
          answered++;
          if (answer.status === 503) unavailable++;
          return answer;
        },
      }));
      const during = send(f, counted, problems, () => outage, 2);
      // The database goes away once a tenth of the cases are answered, and comes back three tenths later.
      const tenth = Math.floor(counted.length / 10);
      await eventually(() => answered >= tenth, 120_000);
      outage = true;
      cluster.stop();
      const stoppedAt = answered;
      await eventually(() => answered >= stoppedAt + 3 * tenth || f?.server.proc.exitCode !== null, 120_000);
      cluster.start();
      await eventually(async () => (await fetch(`${f?.server.url}/readyz`)).status === 200, 30_000);
      await during;
      outage = false;
      // Once the database is back, the whole fuzz again: nothing is a 5xx any more.
      await send(f, f.cases, problems, () => false, 2);
      problems.push(...logProblems(f.server.output(), true));
      expect(problems).toEqual([]);
      expect(unavailable).toBeGreaterThanOrEqual(50);
      expect(f.sockets.map((s) => s.closed)).toEqual([null, null]);
    } catch (error) {
      console.error(`server output (last 8 000 characters):\n${f?.server.output().slice(-8000)}`);
      throw error;
    } finally {
      await cleanUp(f);
      cluster.drop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  },
  300_000,
);
