// Preloaded into the soak's server processes when SOAK_PROBE is set (`bun --preload bench/soak-probe.ts …`):
// every SOAK_PROBE_MS (default 10 s) one JSON line on stderr, prefixed `soak-probe `, tells where the
// process's memory is: JavaScript heap (after a full collection, so garbage does not count), its object
// counts by type, memory held outside the heap, and the size of the SQLite database file (its pages are
// what SQLite's page cache holds). The soak reads these lines to tell a leak from caches filling.

import { heapStats } from "bun:jsc";
import { statSync } from "node:fs";
import { join } from "node:path";

const every = Number(process.env.SOAK_PROBE_MS ?? 10_000);
const databaseFile = process.env.DATABASE_URL ? null : join(process.env.DATA_DIR ?? "data", "actuate.db");
const MiB = (bytes: number) => Math.round((bytes / 1024 / 1024) * 10) / 10;
const sizeOf = (path: string) => {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
};

setInterval(() => {
  Bun.gc(true);
  const stats = heapStats();
  const memory = process.memoryUsage();
  const types = Object.entries(stats.objectTypeCounts)
    .sort(([, a], [, b]) => b - a)
    .slice(0, 12);
  const line = {
    at: Math.round(performance.now() / 1000),
    rss: MiB(memory.rss),
    heap: MiB(stats.heapSize),
    heapCapacity: MiB(stats.heapCapacity),
    extra: MiB(stats.extraMemorySize),
    external: MiB(memory.external),
    objects: stats.objectCount,
    database: databaseFile ? MiB(sizeOf(databaseFile)) : null,
    wal: databaseFile ? MiB(sizeOf(`${databaseFile}-wal`)) : null,
    types: Object.fromEntries(types),
  };
  console.error(`soak-probe ${JSON.stringify(line)}`);
}, every).unref();
