// `bun bench/binary.ts` (part of `bun run bench`): the compiled binary of `bun run build` against
// `bun src/cli/main.ts`: the binary's size, and each one's cold start, from process spawn until
// /healthz answers 200, median of ROUNDS starts (after one warm-up each, alternating) on one SQLite
// database whose active release is the example release. Both start from a folder holding neither the
// repository nor a releases/ folder, so a start publishes nothing and only loads the active release.
import { copyFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { cleanup, freePort, median, ROOT_DIR, startProcess, tempDir } from "./lib.ts";

const ROUNDS = 7;
const POLL_MS = 2;

const built = Bun.spawnSync(["bun", "run", "build"], { cwd: ROOT_DIR, stdout: "ignore", stderr: "pipe" });
if (built.exitCode !== 0) throw new Error(`bun run build failed:\n${built.stderr.toString()}`);
const dir = tempDir("actuate-bench-binary-");
const binary = join(dir, "actuate");
copyFileSync(join(ROOT_DIR, "dist", "actuate"), binary);
const env = { DATA_DIR: join(dir, "data"), SERVICE_KEYS: `bench-key-${crypto.randomUUID()}` };

const published = Bun.spawnSync([binary, "release", "publish", join(ROOT_DIR, "releases", "v1")], {
  cwd: dir,
  env: { ...process.env, ...env },
  stderr: "pipe",
});
if (published.exitCode !== 0) throw new Error(`release publish failed:\n${published.stderr.toString()}`);

const variants = { binary: [binary, "start"], source: ["bun", join(ROOT_DIR, "src", "cli", "main.ts"), "start"] };

/** Milliseconds from spawning `cmd` until its /healthz answers 200. */
async function coldStart(name: string, cmd: string[]): Promise<number> {
  const port = freePort();
  const started = performance.now();
  const proc = startProcess({ name, cmd, cwd: dir, env: { ...env, PORT: String(port) } });
  try {
    for (;;) {
      if (proc.proc.exitCode !== null) throw new Error(`${name} exited before it was healthy:\n${proc.tail()}`);
      const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then(
        (res) => res.status === 200,
        () => false,
      );
      if (ok) return performance.now() - started;
      await Bun.sleep(POLL_MS);
    }
  } finally {
    await proc.stop();
  }
}

const times: Record<keyof typeof variants, number[]> = { binary: [], source: [] };
try {
  for (let round = 0; round <= ROUNDS; round++) {
    for (const [name, cmd] of Object.entries(variants) as [keyof typeof variants, string[]][]) {
      const ms = await coldStart(name, cmd);
      if (round > 0) times[name].push(ms);
    }
  }
} finally {
  await cleanup();
}

const fmt = (values: number[]) => values.map((v) => v.toFixed(0)).join(" · ");
console.log(`\nbinary: dist/actuate, ${(statSync(binary).size / 1024 / 1024).toFixed(1)} MiB`);
console.log("| start | cold start ms (median) | rounds (ms) |\n|---|---:|---|");
console.log(`| binary (\`dist/actuate start\`) | ${median(times.binary).toFixed(0)} | ${fmt(times.binary)} |`);
console.log(`| source (\`bun src/cli/main.ts start\`) | ${median(times.source).toFixed(0)} | ${fmt(times.source)} |`);
