// `bun bench/live-executions.ts` (not part of `bun run bench`): how soon a live list (`subscribe-executions`
// on /session) receives an execution, measured from the moment its invoke was answered (issue #45, "Live").
// - SQLite: one `start` process, the subscriber on it. PostgreSQL: two `start` processes A and B on one fresh
//   database, a subscriber on each; every invoke goes to A.
// - "ended": an action that returns at once (logs.paced, one line, no wait), answered 200; the latency is
//   when the row arrived with `succeeded` minus when the answer arrived (negative: the push came first).
// - "new": an action still running when WAIT_MS (100 ms) answers 202; the latency is when the row arrived
//   with `running` minus when the 202 arrived. A change this process makes is pushed at once; a row made on
//   another instance (or a claim, which nothing announces) is found by the list feed's poll (LIST_POLL_MS).
import { LIST_POLL_MS } from "../src/engine/list-feed.ts";
import {
  cleanup,
  freshPgDatabase,
  percentile,
  publishWithCli,
  ROOT_DIR,
  startServerProcess,
  tempDir,
  waitHealthy,
} from "./lib.ts";

const ENDED_ROUNDS = Number(process.env.BENCH_ROUNDS ?? 200);
const NEW_ROUNDS = Math.max(10, Math.floor(ENDED_ROUNDS / 5));
const KEY = `bench-key-${crypto.randomUUID()}`;
const FIXTURE = `${ROOT_DIR}/test/fixtures/releases/logs`;

type Item = { id: string; status: string };

/** A signed-in socket holding one live list of every execution: when each (id, status) first arrived. */
async function subscriber(base: string) {
  const socket = new WebSocket(`${base.replace(/^http/, "ws")}/session`);
  await new Promise((resolve, reject) => {
    socket.onopen = resolve;
    socket.onerror = reject;
  });
  const arrived = new Map<string, number>();
  const waiters = new Map<string, () => void>();
  let subscribed: () => void = () => {};
  const ready = new Promise<void>((resolve) => (subscribed = resolve));
  socket.onmessage = (event) => {
    const at = performance.now();
    const message = JSON.parse(String(event.data)) as Record<string, unknown>;
    if (message.op === "init-ok") {
      socket.send(JSON.stringify({ op: "subscribe-executions", "subscription-id": "all" }));
    } else if (message.op === "subscribe-executions-ok") {
      subscribed();
    } else if (message.op === "executions-changed") {
      for (const item of message.items as Item[]) {
        const key = `${item.id} ${item.status}`;
        if (arrived.has(key)) continue;
        arrived.set(key, at);
        waiters.get(key)?.();
      }
    } else if (message.op === "error") {
      throw new Error(`${base}: ${JSON.stringify(message)}`);
    }
  };
  socket.send(JSON.stringify({ op: "init", "access-token": KEY }));
  await ready;
  return {
    /** When the row arrived in this state (waits for it). */
    async at(id: string, status: string): Promise<number> {
      const key = `${id} ${status}`;
      const known = arrived.get(key);
      if (known !== undefined) return known;
      await new Promise<void>((resolve) => waiters.set(key, resolve));
      return arrived.get(key) as number;
    },
    close: () => socket.close(),
  };
}

async function invoke(base: string, input: Record<string, number>) {
  const response = await fetch(`${base}/actions/logs.paced/invoke`, {
    method: "POST",
    headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
    body: JSON.stringify({ requestId: crypto.randomUUID(), input }),
  });
  const answered = performance.now();
  const { id } = ((await response.json()) as { execution: { id: string } }).execution;
  return { id, answered, status: response.status };
}

const summary = (values: number[]) => {
  const sorted = [...values].sort((x, y) => x - y);
  const ms = (v: number | undefined) => `${(v ?? Number.NaN).toFixed(1)} ms`;
  return `p50 ${ms(percentile(sorted, 50))}, p99 ${ms(percentile(sorted, 99))}, max ${ms(sorted.at(-1))} (${sorted.length})`;
};

async function measure(label: string, databaseUrl: string | null) {
  const shared: Record<string, string> = { SERVICE_KEYS: KEY, WAIT_MS: "100" };
  const dataDir = tempDir("actuate-bench-live-a-");
  if (databaseUrl) shared.DATABASE_URL = databaseUrl;
  publishWithCli(FIXTURE, { ...shared, DATA_DIR: databaseUrl ? tempDir("actuate-bench-publish-") : dataDir });
  const servers = [startServerProcess(`${label}-a`, { ...shared, DATA_DIR: dataDir })];
  if (databaseUrl)
    servers.push(startServerProcess(`${label}-b`, { ...shared, DATA_DIR: tempDir("actuate-bench-live-b-") }));
  await Promise.all(servers.map((s) => waitHealthy(`${s.url}/healthz`, s.proc)));
  const [a] = servers as [(typeof servers)[number]];
  const subscribers = await Promise.all(servers.map((s) => subscriber(s.url)));
  const ended = subscribers.map(() => [] as number[]);
  const fresh = subscribers.map(() => [] as number[]);
  for (let round = 0; round < ENDED_ROUNDS; round++) {
    const { id, answered, status } = await invoke(a.url, { lines: 1, everyMs: 0, startMs: 0 });
    const arrivals = await Promise.all(subscribers.map((s) => s.at(id, "succeeded")));
    // A 202 (the first call loads the release past WAIT_MS) measures the wait, not the push: not counted.
    if (status === 200) for (const [i, at] of arrivals.entries()) ended[i]?.push(at - answered);
  }
  for (let round = 0; round < NEW_ROUNDS; round++) {
    const { id, answered, status } = await invoke(a.url, { lines: 1, everyMs: 0, startMs: 1_000 });
    if (status !== 202) throw new Error(`invoke answered ${status}`);
    const arrivals = await Promise.all(subscribers.map((s) => s.at(id, "running")));
    for (const [i, at] of arrivals.entries()) fresh[i]?.push(at - answered);
  }
  for (const s of subscribers) s.close();
  console.log(`${label}:`);
  subscribers.forEach((_, i) => {
    const where = i === 0 ? "subscriber on A (the instance invoked)" : "subscriber on B (another instance)";
    console.log(`  ${where}`);
    console.log(`    ended (200 answered → row succeeded): ${summary(ended[i] ?? [])}`);
    console.log(`    new   (202 answered → row running):   ${summary(fresh[i] ?? [])}`);
  });
  await Promise.all(servers.map((s) => s.proc.stop()));
}

try {
  console.log(`live lists: LIST_POLL_MS ${LIST_POLL_MS}, ${ENDED_ROUNDS} ended and ${NEW_ROUNDS} new rounds`);
  await measure("SQLite", null);
  await measure("PostgreSQL", await freshPgDatabase("actuate_bench_live"));
} finally {
  await cleanup();
}
