// `bun bench/data.ts` (part of `bun run bench`): the data layer on SQLite.
// 1. A two-level query (100 notes with their authors, filtered by an indexed attribute, 100k notes
//    stored) through the query compiler, against the same query hand-written in SQL through the same
//    driver, interleaved in one process.
// 2. 1 000 WebSocket subscribers on one query, one write: time until the last one has its refresh,
//    and the server's RSS per subscriber.
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { loadConfig } from "../src/config.ts";
import { DataService } from "../src/data/service.ts";
import { bundlesDir } from "../src/main.ts";
import { publishRelease } from "../src/release/publish.ts";
import { openStore } from "../src/store/open.ts";
import { cleanup, freePort, LAUNCH_ENV, median, ROOT_DIR, startProcess, tempDir, waitHealthy } from "./lib.ts";

const RELEASE = join(ROOT_DIR, "test/fixtures/releases/data");
const NOTES = 100_000;
const USERS = 1_000;
const SUBSCRIBERS = 1_000;

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
};

function seed(path: string) {
  const db = new Database(path);
  const now = Date.now();
  const entity = db.prepare(
    "insert into data_entities (id, entity, doc, created_at, updated_at) values (?, ?, ?, ?, ?)",
  );
  const link = db.prepare(
    "insert into data_links (link, source_id, target_id, created_at) values ('noteAuthor', ?, ?, ?)",
  );
  db.transaction(() => {
    const users: string[] = [];
    for (let i = 0; i < USERS; i++) {
      const id = crypto.randomUUID();
      users.push(id);
      entity.run(id, "users", JSON.stringify({ email: `user${i}@example.com`, name: `User ${i}` }), now + i, now + i);
    }
    for (let i = 0; i < NOTES; i++) {
      const id = crypto.randomUUID();
      const doc = { title: `note ${i}`, done: i % 2 === 0, ownerId: `user-${i % 100}`, priority: i % 1000 };
      entity.run(id, "notes", JSON.stringify(doc), now + i, now + i);
      link.run(id, users[i % USERS] as string, now + i);
    }
  })();
  db.close();
}

async function queryVersusSql() {
  const dataDir = tempDir("actuate-bench-data-");
  const config = loadConfig({ DATA_DIR: dataDir, PORT: "0" });
  const store = await openStore(config.databaseUrl);
  const { release } = await publishRelease({
    store,
    bundlesDir: bundlesDir(config),
    dir: RELEASE,
    whenTaken: "suffix",
  });
  const path = config.databaseUrl.replace(/^sqlite:/, "");
  seed(path);
  const data = new DataService(store.data);
  const service = { kind: "service", id: "bench" } as const;
  const query = { notes: { $: { where: { priority: 7 }, limit: 100 }, author: {} } };

  const raw = new Database(path, { readonly: true });
  const notesSql = raw.prepare(
    "select id, doc, created_at from data_entities where entity = 'notes' and json_extract(doc, '$.priority') = ? order by created_at, id limit 100",
  );
  const authorsSql = raw.prepare(
    `select l.source_id as parent_id, e.id, e.doc, e.created_at from data_links l join data_entities e on e.id = l.target_id
     where l.link = 'noteAuthor' and l.source_id in (select value from json_each(?))`,
  );
  const byHand = () => {
    const notes = (notesSql.all(7) as { id: string; doc: string }[]).map((n) => ({ id: n.id, ...JSON.parse(n.doc) }));
    const authors = new Map(
      (authorsSql.all(JSON.stringify(notes.map((n) => n.id))) as { parent_id: string; id: string; doc: string }[]).map(
        (a) => [a.parent_id, { id: a.id, ...JSON.parse(a.doc) }],
      ),
    );
    return { notes: notes.map((n) => ({ ...n, author: authors.get(n.id) ?? null })) };
  };
  const ours = (await data.query(service, release, query, "objects")) as { notes: unknown[] };
  const theirs = byHand();
  if (JSON.stringify(ours) !== JSON.stringify(theirs) || ours.notes.length !== 100) {
    throw new Error("the compiled query and the hand-written SQL disagree");
  }
  const rounds: { ours: number; sql: number }[] = [];
  for (let round = 0; round < 5; round++) {
    const n = 300;
    let start = performance.now();
    for (let i = 0; i < n; i++) await data.query(service, release, query, "objects");
    const oursRate = n / ((performance.now() - start) / 1000);
    start = performance.now();
    for (let i = 0; i < n; i++) byHand();
    rounds.push({ ours: oursRate, sql: n / ((performance.now() - start) / 1000) });
  }
  raw.close();
  await store.close();
  const oursMedian = median(rounds.map((r) => r.ours));
  const sqlMedian = median(rounds.map((r) => r.sql));
  console.log(`two-level query, ${NOTES / 1000}k notes stored, 100 returned with authors (SQLite):`);
  console.log(
    `  compiled InstaQL  ${oursMedian.toFixed(0)} queries/s   hand-written SQL  ${sqlMedian.toFixed(0)} queries/s`,
  );
  console.log(
    `  ratio ${(oursMedian / sqlMedian).toFixed(2)}  (target >= 0.5)${oursMedian / sqlMedian >= 0.5 ? "" : "  MISSED"}`,
  );
}

function rssOf(pid: number): number {
  const status = require("node:fs").readFileSync(`/proc/${pid}/status`, "utf8") as string;
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) * 1024;
}

async function fanOut() {
  const port = freePort();
  const key = `bench-${crypto.randomUUID()}`;
  const server = startProcess({
    name: "actuate-live",
    cmd: ["bun", "src/cli/main.ts", "start", "--release", RELEASE],
    env: {
      ...LAUNCH_ENV,
      PORT: String(port),
      HOST: "127.0.0.1",
      DATA_DIR: tempDir("actuate-bench-live-"),
      SERVICE_KEYS: key,
      DATABASE_URL: "",
      // One caller holds every subscriber here: the per-caller caps (issue #13) would refuse the 51st socket.
      LIVE_MAX_SOCKETS_PER_CALLER: String(SUBSCRIBERS),
      LIVE_MAX_SUBSCRIPTIONS_PER_CALLER: String(SUBSCRIBERS),
    },
  });
  const base = `http://127.0.0.1:${port}`;
  await waitHealthy(`${base}/healthz`, server);
  const pid = server.proc.pid;
  const invoke = (title: string) =>
    fetch(`${base}/actions/data.add-note/invoke`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}` },
      body: JSON.stringify({ requestId: crypto.randomUUID(), input: { title, priority: 1 } }),
    });
  await invoke("warm-up");
  const rssBefore = rssOf(pid);

  const q = { notes: { $: { where: { title: { $like: "live %" } }, limit: 20 } } };
  let refreshed = 0;
  let allRefreshed: () => void = () => {};
  const sockets: WebSocket[] = [];
  for (let i = 0; i < SUBSCRIBERS; i++) {
    const socket = new WebSocket(`ws://127.0.0.1:${port}/session`);
    await new Promise<void>((resolve, reject) => {
      socket.onerror = reject;
      socket.onclose = (event) => reject(new Error(`subscriber ${i} closed: ${event.code} ${event.reason}`));
      socket.onmessage = (event) => {
        const message = JSON.parse(String(event.data));
        if (message.op === "init-ok") socket.send(JSON.stringify({ op: "add-query", q, "return-type": "tree" }));
        else if (message.op === "add-query-ok") resolve();
        else if (message.op === "refresh-ok" && ++refreshed === SUBSCRIBERS) allRefreshed();
      };
      socket.onopen = () => socket.send(JSON.stringify({ op: "init", "access-token": key }));
    });
    sockets.push(socket);
  }
  await Bun.sleep(200);
  const rssAfter = rssOf(pid);

  const latencies: number[] = [];
  for (let write = 0; write < 10; write++) {
    refreshed = 0;
    const done = new Promise<void>((resolve) => {
      allRefreshed = resolve;
    });
    const start = performance.now();
    await invoke(`live ${write}`);
    await done;
    latencies.push(performance.now() - start);
  }
  for (const socket of sockets) socket.close();
  console.log(`${SUBSCRIBERS} WebSocket subscribers on one query, one write (SQLite), 10 writes:`);
  console.log(
    `  write to last refresh  p50 ${percentile(latencies, 50).toFixed(1)} ms  p99 ${percentile(latencies, 99).toFixed(1)} ms  (target p99 <= 100 ms)${percentile(latencies, 99) <= 100 ? "" : "  MISSED"}`,
  );
  console.log(`  server RSS per subscriber  ${((rssAfter - rssBefore) / SUBSCRIBERS / 1024).toFixed(1)} KiB`);
}

try {
  await queryVersusSql();
  await fanOut();
} finally {
  await cleanup();
}
