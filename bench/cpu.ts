// CPU time of the processes under test, from /proc (Linux): what a request costs the server and the
// database, a figure that holds still on a noisy machine where requests a second wander by a fifth
// from one round to the next (BENCHMARKS.md, tenth session). Elsewhere every reading is null.
import { readdirSync, readFileSync } from "node:fs";
import type { Sql } from "postgres";

/** Clock ticks a second of /proc/<pid>/stat's utime and stime. */
const TICKS_PER_SECOND = (() => {
  const answer = Bun.spawnSync(["getconf", "CLK_TCK"], { stderr: "ignore" });
  const ticks = Number(answer.stdout.toString().trim());
  return Number.isInteger(ticks) && ticks > 0 ? ticks : 100;
})();

/** A process's parent and CPU (user + system, all its threads, in ms); null once it is gone or without /proc. */
function stat(pid: number): { parent: number; cpuMs: number } | null {
  try {
    const line = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The name (2nd field) is in parentheses and may hold spaces: count the fields after its closing one.
    const fields = line.slice(line.lastIndexOf(")") + 2).split(" ");
    const ticks = Number(fields[11]) + Number(fields[12]); // utime, stime: the 14th and 15th of the line
    return { parent: Number(fields[1]), cpuMs: (ticks * 1000) / TICKS_PER_SECOND };
  } catch {
    return null;
  }
}

export const processCpuMs = (pid: number): number | null => stat(pid)?.cpuMs ?? null;

/** The postmaster of the PostgreSQL server `sql` talks to: its backend's parent (null unless on this machine). */
export async function postmasterOf(sql: Sql): Promise<number | null> {
  const [backend] = await sql<{ pid: number }[]>`select pg_backend_pid() as pid`;
  return backend ? (stat(backend.pid)?.parent ?? null) : null;
}

/** The CPU of a PostgreSQL server, in ms: its postmaster and every child (backends, WAL writer, …). */
export function postgresCpuMs(postmaster: number): number | null {
  const own = stat(postmaster);
  if (own === null) return null;
  let total = own.cpuMs;
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const child = stat(Number(name));
    if (child?.parent === postmaster) total += child.cpuMs;
  }
  return total;
}

export interface CpuReading {
  serverMs: number | null;
  databaseMs: number | null;
}

/** Reads the server's CPU, and that of the PostgreSQL server (its postmaster's pid) when it uses one. */
export function readCpu(serverPid: number, postmaster: number | null): CpuReading {
  return { serverMs: processCpuMs(serverPid), databaseMs: postmaster === null ? null : postgresCpuMs(postmaster) };
}

/** µs of CPU a request, between two readings; null where either reading is missing. */
export function cpuPerRequest(before: CpuReading, after: CpuReading, requests: number) {
  const per = (a: number | null, b: number | null) =>
    a === null || b === null || requests === 0 ? null : ((b - a) * 1000) / requests;
  return { serverUs: per(before.serverMs, after.serverMs), databaseUs: per(before.databaseMs, after.databaseMs) };
}
