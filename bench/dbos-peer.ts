// The DBOS Transact peer of the workflow bench (bench/workflows.ts): a tiny HTTP server around the
// equivalent workflow (three trivial steps, result `{ total }`), on its own PostgreSQL database.
// Env: DATABASE_URL (DBOS's system database), PORT, HOST, DBOS_POOL (system database pool size).
//   POST /start {n, id?}  → starts the workflow in the background (id: its workflow ID, the idempotency key) → {id}
//   GET /result/:id       → waits for the workflow to end → {status, output}
//   GET /healthz          → {ok: true}
// Plain node:http, so the same file runs under Bun (`bun bench/dbos-peer.ts`) and Node >= 22.18
// (`node bench/dbos-peer.ts`, types stripped). DBOS runs with its default durability: the workflow's
// status and every step's result are committed to PostgreSQL before the workflow goes on.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { DBOS, type WorkflowHandle } from "@dbos-inc/dbos-sdk";

const runtime = typeof Bun === "undefined" ? `node ${process.version}` : `bun ${Bun.version}`;

const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) throw new Error("DATABASE_URL is required");

DBOS.setConfig({
  name: "actuate-bench",
  systemDatabaseUrl: databaseUrl,
  systemDatabasePoolSize: Number(process.env.DBOS_POOL ?? 10),
  logLevel: "warn",
});

const threeSteps = DBOS.registerWorkflow(
  async (n: number) => {
    const a = await DBOS.runStep(async () => n + 1, { name: "one" });
    const b = await DBOS.runStep(async () => a + 1, { name: "two" });
    const c = await DBOS.runStep(async () => b + 1, { name: "three" });
    return { total: c };
  },
  { name: "threeSteps" },
);

await DBOS.launch();

// Handles of the workflows this process started: waiting on one awaits the workflow in memory, as a
// DBOS application does for its own workflows. A retrieved handle polls the database (every second by
// default), which would measure the polling interval rather than DBOS.
const started = new Map<string, WorkflowHandle<{ total: number }>>();

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

async function readJson(req: IncomingMessage): Promise<{ n: number; id?: string }> {
  let text = "";
  for await (const chunk of req) text += chunk;
  return JSON.parse(text);
}

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = req.url ?? "/";
  if (req.method === "GET" && path === "/healthz") return send(res, 200, { ok: true });
  if (req.method === "POST" && path === "/start") {
    const { n, id } = await readJson(req);
    const handle = await DBOS.startWorkflow(threeSteps, { workflowID: id })(n);
    started.set(handle.workflowID, handle);
    return send(res, 202, { id: handle.workflowID });
  }
  if (req.method === "GET" && path.startsWith("/result/")) {
    const id = decodeURIComponent(path.slice("/result/".length));
    const handle = started.get(id) ?? DBOS.retrieveWorkflow<{ total: number }>(id);
    try {
      return send(res, 200, { status: "succeeded", output: await handle.getResult() });
    } finally {
      started.delete(id);
    }
  }
  send(res, 404, { error: "not_found" });
}

const server = createServer((req, res) => {
  handle(req, res).catch((error) => send(res, 500, { status: "failed", error: String(error) }));
});
server.listen(Number(process.env.PORT ?? 0), process.env.HOST ?? "127.0.0.1", () => {
  console.log(`dbos peer listening on ${JSON.stringify(server.address())} (${runtime})`);
});

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, async () => {
    server.close();
    await DBOS.shutdown();
    process.exit(0);
  });
}
