// `bun bench/start.ts` (part of `bun run bench`): how fast a server starts and how much memory it holds
// idle, for the compiled binary of `bun run build` and for `bun src/cli/main.ts start`, with the example
// release and with a generated release of 100 actions, each on its own SQLite database (disk storage)
// whose active release it is. Both start from a folder holding neither the repository nor a releases/
// folder, so a start publishes nothing and only loads the active release.
// - cold start: from process spawn until /healthz answers 200, median of ROUNDS starts (after one warm-up).
// - idle RSS: the process's resident memory IDLE_MS after that first 200, no other request made.
// - the binary is measured as a deployed one is, read from disk: it is synced and its pages dropped from
//   the page cache (dd) before the warm-up start, whose page faults read it. A file just written (`bun run
//   build`, a copy: what this bench measured before 2026-11-24) stays in the page cache in the large folios
//   it was written in, and a start maps whole folios: ~4-5 MiB more RSS of the same, clean, shared code.
//   The "binary, just copied" row shows that case (a fresh copy before each start).
// The budgets of issue 14 are printed next to the figures: later work must load its parts lazily so they hold.
import { copyFileSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cleanup, freePort, LAUNCH_ENV, median, ROOT_DIR, startProcess, tempDir } from "./lib.ts";

const ROUNDS = Number(process.env.BENCH_START_ROUNDS ?? 7);
const POLL_MS = 2;
const IDLE_MS = 1_000;
const GENERATED_ACTIONS = 100;
const BUDGET = { rssMiB: 60, exampleMs: 200, hundredMs: 300 };

const built = Bun.spawnSync(["bun", "run", "build"], { cwd: ROOT_DIR, stdout: "ignore", stderr: "pipe" });
if (built.exitCode !== 0) throw new Error(`bun run build failed:\n${built.stderr.toString()}`);
const dir = tempDir("actuate-bench-start-");
const binary = join(dir, "actuate");
copyFileSync(join(ROOT_DIR, "dist", "actuate"), binary);
const key = `bench-key-${crypto.randomUUID()}`;

/** A release folder of `count` small actions, each with its own input and output schema. */
function generatedRelease(count: number): string {
  const folder = join(dir, `release-${count}`);
  for (let i = 0; i < count; i++) {
    const domain = join(folder, "actions", `d${Math.floor(i / 10)}`);
    mkdirSync(domain, { recursive: true });
    writeFileSync(
      join(domain, `a${i}.ts`),
      `import { defineAction, Type } from "actuate";
export default defineAction({
  description: "generated action ${i}",
  input: Type.Object({ a: Type.Number(), note: Type.Optional(Type.String({ maxLength: 100 })) }),
  output: Type.Object({ sum: Type.Number(), n: Type.Literal(${i}) }),
  handler: ({ a }) => ({ sum: a + ${i}, n: ${i} as const }),
});
`,
    );
  }
  writeFileSync(
    join(folder, "release.ts"),
    `import { defineRelease } from "actuate";\nexport default defineRelease({ version: "gen${count}", description: "generated" });\n`,
  );
  return folder;
}

const setups = {
  example: join(ROOT_DIR, "releases", "v1"),
  [`${GENERATED_ACTIONS} actions`]: generatedRelease(GENERATED_ACTIONS),
};

/** The environment of a server whose database has `release` active. */
function publishedEnv(name: string, release: string): Record<string, string> {
  const env = { DATA_DIR: join(dir, `data-${name.replace(/\W+/g, "-")}`), SERVICE_KEYS: key, STORAGE: "disk" };
  const published = Bun.spawnSync([binary, "release", "publish", release], {
    cwd: dir,
    env: { ...process.env, ...env },
    stderr: "pipe",
  });
  if (published.exitCode !== 0) throw new Error(`release publish failed:\n${published.stderr.toString()}`);
  return env;
}

/** Writes `file` back and drops its pages from the page cache, so the next start reads it from disk (GNU dd). */
function dropFromPageCache(file: string): void {
  const dropped = Bun.spawnSync(["dd", `of=${file}`, "oflag=nocache", "conv=notrunc,fdatasync", "count=0"], {
    stderr: "pipe",
  });
  if (dropped.exitCode !== 0) throw new Error(`dd could not drop ${file} from the page cache:\n${dropped.stderr}`);
}

// Copies are made from another copy: reading `binary` would bring its pages back in large folios.
const original = join(dir, "actuate-original");
copyFileSync(binary, original);
/** A fresh copy of the binary (its pages are in the page cache as written), made over the last one. */
function justCopied(): string {
  const copy = join(dir, "actuate-copy");
  rmSync(copy, { force: true });
  copyFileSync(original, copy);
  return copy;
}

dropFromPageCache(binary);

/** Each way of starting a server: the command, prepared right before each start. */
const variants: Record<string, () => string[]> = {
  binary: () => [binary, "start"],
  "binary, just copied": () => [justCopied(), "start"],
  source: () => ["bun", join(ROOT_DIR, "src", "cli", "main.ts"), "start"],
};

/** Resident memory of a process, MiB (Linux). */
function rssMiB(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8").match(/^VmRSS:\s+(\d+) kB$/m);
  if (!line?.[1]) throw new Error(`no VmRSS for ${pid}`);
  return Number(line[1]) / 1024;
}

/** Milliseconds from spawning `cmd` until its /healthz answers 200, and its RSS IDLE_MS later. */
async function start(name: string, cmd: string[], env: Record<string, string>): Promise<{ ms: number; rss: number }> {
  const port = freePort();
  const started = performance.now();
  const proc = startProcess({ name, cmd, cwd: dir, env: { ...LAUNCH_ENV, ...env, PORT: String(port) } });
  try {
    for (;;) {
      if (proc.proc.exitCode !== null) throw new Error(`${name} exited before it was healthy:\n${proc.tail()}`);
      const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then(
        (res) => res.status === 200,
        () => false,
      );
      if (ok) break;
      await Bun.sleep(POLL_MS);
    }
    const ms = performance.now() - started;
    await Bun.sleep(IDLE_MS);
    return { ms, rss: rssMiB(proc.proc.pid) };
  } finally {
    await proc.stop();
  }
}

type Row = { setup: string; variant: string; ms: number[]; rss: number[] };
const rows: Row[] = [];
try {
  for (const [setup, release] of Object.entries(setups)) {
    const env = publishedEnv(setup, release);
    const bySetup = Object.keys(variants).map((variant) => ({
      setup,
      variant,
      ms: [] as number[],
      rss: [] as number[],
    }));
    for (let round = 0; round <= ROUNDS; round++) {
      for (const row of bySetup) {
        const cmd = variants[row.variant]?.();
        if (!cmd) throw new Error(`no variant ${row.variant}`);
        const result = await start(`${setup}-${row.variant}`, cmd, env);
        if (round === 0) continue;
        row.ms.push(result.ms);
        row.rss.push(result.rss);
      }
    }
    rows.push(...bySetup);
  }
} finally {
  await cleanup();
}

const fmt = (values: number[]) => values.map((v) => v.toFixed(0)).join(" · ");
const load = readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
const budgetMs = (setup: string) => (setup === "example" ? BUDGET.exampleMs : BUDGET.hundredMs);
console.log(
  `\nbinary: dist/actuate, ${(statSync(binary).size / 1024 / 1024).toFixed(1)} MiB; load average at the end: ${load}`,
);
console.log(
  "| release | start | cold start ms (median) | budget | idle RSS MiB (median) | budget | cold starts (ms) |\n|---|---|---:|---:|---:|---:|---|",
);
for (const row of rows) {
  const ms = median(row.ms);
  const rss = median(row.rss);
  const over = (value: number, budget: number) => (value <= budget ? `≤ ${budget} met` : `**> ${budget} missed**`);
  console.log(
    `| ${row.setup} | ${row.variant} | ${ms.toFixed(0)} | ${over(ms, budgetMs(row.setup))} | ${rss.toFixed(1)} | ${over(rss, BUDGET.rssMiB)} | ${fmt(row.ms)} |`,
  );
}
