// CPU time of the processes under test, from /proc (Linux): what a request costs the server and the
// database, a figure that holds still on a noisy machine where requests a second wander by a fifth
// from one round to the next (BENCHMARKS.md, tenth session). Elsewhere every reading is null.
import { readdirSync, readFileSync } from "node:fs";

/** Clock ticks a second of /proc/<pid>/stat's utime and stime. */
const TICKS_PER_SECOND = (() => {
  const answer = Bun.spawnSync(["getconf", "CLK_TCK"], { stderr: "ignore" });
  const ticks = Number(answer.stdout.toString().trim());
  return Number.isInteger(ticks) && ticks > 0 ? ticks : 100;
})();

/** The user + system CPU a process (all its threads) has used, in ms; null when it cannot be read. */
export function processCpuMs(pid: number): number | null {
  try {
    // The name field (2nd) is in parentheses and may hold spaces: count fields after its closing one.
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ticks = Number(fields[11]) + Number(fields[12]); // utime, stime (14th and 15th of the line)
    return Number.isFinite(ticks) ? (ticks * 1000) / TICKS_PER_SECOND : null;
  } catch {
    return null;
  }
}

/** The CPU of every process named `postgres` (the server and its backends), in ms; null without /proc. */
export function postgresCpuMs(): number | null {
  let pids: string[];
  try {
    pids = readdirSync("/proc").filter((name) => /^\d+$/.test(name));
  } catch {
    return null;
  }
  let total = 0;
  for (const pid of pids) {
    try {
      if (readFileSync(`/proc/${pid}/comm`, "utf8").trim() !== "postgres") continue;
    } catch {
      continue; // gone meanwhile
    }
    total += processCpuMs(Number(pid)) ?? 0;
  }
  return total;
}

export interface CpuReading {
  serverMs: number | null;
  databaseMs: number | null;
}

/** Reads the server's CPU, and PostgreSQL's when the scenario uses it. */
export function readCpu(serverPid: number, database: boolean): CpuReading {
  return { serverMs: processCpuMs(serverPid), databaseMs: database ? postgresCpuMs() : null };
}

/** µs of CPU a request, between two readings; null where either reading is missing. */
export function cpuPerRequest(before: CpuReading, after: CpuReading, requests: number) {
  const per = (a: number | null, b: number | null) =>
    a === null || b === null || requests === 0 ? null : ((b - a) * 1000) / requests;
  return { serverUs: per(before.serverMs, after.serverMs), databaseUs: per(before.databaseMs, after.databaseMs) };
}
