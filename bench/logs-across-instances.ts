// `bun bench/logs-across-instances.ts` (not part of `bun run bench`): how soon a follower receives an
// execution's log lines on the instance that runs it and on another one (issue #43 item 1).
// - Two `start` processes, A and B, on one fresh PostgreSQL database, FOLLOW_POLL_MS at its default.
// - Each round invokes test fixture `logs.paced` on A (LINES lines, EVERY_MS apart), and follows it with
//   `subscribe-stream` from one socket on A and one on B; a line's latency is when the socket received it
//   minus its `at` (stamped by A when the handler logged it; one clock, ms resolution). Only lines logged
//   after both sockets were following count.
// - Then the cost of the word for followers on a store nobody follows: the append statement (one INSERT of
//   one line, and its NOTIFY) against the bare INSERT, each run APPENDS times one after the other.
// Target (issue #43): p99 ≤ 50 ms on the other instance.
import postgres from "postgres";
import { APPEND_LINES, insertLogLines, logLinesJson } from "../src/store/pg/execution-logs.ts";
import {
  cleanup,
  freshPgDatabase,
  median,
  percentile,
  publishWithCli,
  ROOT_DIR,
  startServerProcess,
  tempDir,
  waitHealthy,
} from "./lib.ts";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const LINES = 150;
const EVERY_MS = 10;
const APPENDS = 2_000;
const KEY = `bench-key-${crypto.randomUUID()}`;
const FIXTURE = `${ROOT_DIR}/test/fixtures/releases/logs`;

type Message = Record<string, unknown> & { op?: string; log?: string; at?: number; done?: boolean };

/** A /session socket following one execution: each line's latency once `counting` is set. */
async function follow(base: string, id: string) {
  const socket = new WebSocket(`${base.replace(/^http/, "ws")}/session`);
  await new Promise((resolve, reject) => {
    socket.onopen = resolve;
    socket.onerror = reject;
  });
  const latencies: number[] = [];
  let subscribed: () => void = () => {};
  let ended: () => void = () => {};
  const following = new Promise<void>((resolve) => (subscribed = resolve));
  const done = new Promise<void>((resolve) => (ended = resolve));
  const state = { countFrom: Number.POSITIVE_INFINITY };
  socket.onmessage = (event) => {
    const received = Date.now();
    const message = JSON.parse(String(event.data)) as Message;
    if (message.op === "init-ok") socket.send(JSON.stringify({ op: "subscribe-stream", "execution-id": id }));
    if (message.op === "error") throw new Error(`${base}: ${JSON.stringify(message)}`);
    if (message.op !== "stream-append") return;
    if (message.log === undefined) subscribed();
    else if ((message.at as number) >= state.countFrom) latencies.push(received - (message.at as number));
    if (message.done) ended();
  };
  socket.send(JSON.stringify({ op: "init", "access-token": KEY }));
  await following;
  return { latencies, state, done: done.finally(() => socket.close()) };
}

const summary = (values: number[]) => {
  const sorted = [...values].sort((x, y) => x - y);
  return `p50 ${percentile(sorted, 50)} ms, p99 ${percentile(sorted, 99)} ms, max ${sorted.at(-1)} ms (${sorted.length} lines)`;
};

try {
  const databaseUrl = await freshPgDatabase("actuate_bench_logs");
  const shared = { DATABASE_URL: databaseUrl, SERVICE_KEYS: KEY, WAIT_MS: "100" };
  publishWithCli(FIXTURE, { ...shared, DATA_DIR: tempDir("actuate-bench-publish-") });
  const a = startServerProcess("a", { ...shared, DATA_DIR: tempDir("actuate-bench-a-") });
  const b = startServerProcess("b", { ...shared, DATA_DIR: tempDir("actuate-bench-b-") });
  await Promise.all([waitHealthy(`${a.url}/healthz`, a.proc), waitHealthy(`${b.url}/healthz`, b.proc)]);

  const same: number[] = [];
  const other: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const response = await fetch(`${a.url}/actions/logs.paced/invoke`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
      body: JSON.stringify({
        requestId: crypto.randomUUID(),
        input: { lines: LINES, everyMs: EVERY_MS, startMs: 300 },
      }),
    });
    const { id } = ((await response.json()) as { execution: { id: string } }).execution;
    const followers = await Promise.all([follow(a.url, id), follow(b.url, id)]);
    for (const follower of followers) follower.state.countFrom = Date.now();
    await Promise.all(followers.map((follower) => follower.done));
    same.push(...followers[0].latencies);
    other.push(...followers[1].latencies);
  }

  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  const timed = async (statement: string) => {
    const times: number[] = [];
    for (let i = 0; i < APPENDS; i++) {
      const line = {
        executionId: `bench-${crypto.randomUUID()}`,
        seq: 0,
        at: Date.now(),
        level: "info" as const,
        step: null,
        line: "a line",
      };
      const began = performance.now();
      await sql.unsafe(statement, [logLinesJson(1, [line])], { prepare: true });
      times.push(performance.now() - began);
    }
    return median(times);
  };
  await timed(APPEND_LINES);
  const bare = await timed(insertLogLines("$1"));
  const notifying = await timed(APPEND_LINES);
  await sql.end();

  console.log(`log lines of an execution on A (${ROUNDS} rounds of ${LINES} lines, ${EVERY_MS} ms apart):`);
  console.log(`  follower on A (same instance):  ${summary(same)}`);
  console.log(`  follower on B (other instance): ${summary(other)}`);
  console.log(
    `append of one line, median of ${APPENDS}: INSERT ${bare.toFixed(3)} ms, INSERT + NOTIFY ${notifying.toFixed(3)} ms`,
  );
} finally {
  await cleanup();
}
