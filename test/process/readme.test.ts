/**
 * The README runs as pasted. In a copy of the repository (node_modules linked, not copied) the test
 * starts `bun run dev` as a newcomer would, then runs the README's shell blocks marked ```` ```sh test ````
 * in order, all in one bash (`set -euo pipefail`, stderr into stdout), so the variables a block sets
 * (`KEY`, `TOKEN`, …) are there for the next, as in one terminal.
 *
 * Conventions of the README's blocks:
 * - ```` ```sh test ```` is run; a plain ```` ```sh ```` block is not (installing, `bun run dev` itself,
 *   commands with placeholders).
 * - `# → text` states what the block answers: its output holds each such text, in the order written.
 *   Every tested block states at least one.
 * - The blocks name the server once, `BASE=http://127.0.0.1:3000` in the first, and reach it as `$BASE`;
 *   the test serves on another port (a free one) and sets `BASE` to its address instead. That is the
 *   only change made to a block.
 * - "Host several environments": its ```` ```sh test-hosting ```` blocks run after the others, in another
 *   bash, against the same folder served again as the README says (`SERVICE_URL=http://actuate.localhost:3000
 *   bun run dev`, the first server stopped). They name hosts under `actuate.localhost:3000`; the test serves on
 *   a free port and writes it there instead: the only change made to those blocks.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import * as client from "../../src/client/index.ts";
import * as sdk from "../../src/sdk/index.ts";
import { repoRoot, type ServerProcess, serve } from "../support/cli.ts";
import { freePort } from "../support/hosting.ts";

/** The README's one line naming the server. */
const BASE_LINE = /^BASE=http:\/\/127\.0\.0\.1:3000$/m;
const MARK = "@@readme-block";
/** Generous: the blocks take a few seconds; this only stops a hung command from hanging the suite. */
const SCRIPT_DEADLINE_MS = 60_000;
/** The README's hosting-mode start, and the service it names. */
const HOSTING_START = /^SERVICE_URL=(http:\/\/actuate\.localhost:3000) bun run dev$/m;
const SERVICE = "actuate.localhost:3000";

interface Block {
  /** 1-based line of the opening fence in README.md. */
  line: number;
  heading: string;
  code: string;
  expected: string[];
}

/** The blocks of a markdown text fenced as ```` ```<info> ````, with the heading each sits under. */
function fencedBlocks(markdown: string, info: string): Block[] {
  const lines = markdown.split("\n");
  const blocks: Block[] = [];
  let heading = "";
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? "";
    if (/^#{1,6} /.test(line)) heading = line.replace(/^#+ /, "");
    if (!line.startsWith("```")) continue;
    const end = lines.findIndex((l, j) => j > i && l.startsWith("```"));
    if (line.trim() === `\`\`\`${info}`) {
      const code = lines.slice(i + 1, end);
      const expected = code.flatMap((l) => /^# → (.+)$/.exec(l)?.slice(1) ?? []);
      blocks.push({ line: i + 1, heading, code: code.join("\n"), expected });
    }
    i = end;
  }
  return blocks;
}

/** Relative links of a markdown text, as written (no URLs, no anchors within the page). */
const relativeLinks = (markdown: string) =>
  [...markdown.matchAll(/\]\(([^)\s]+)\)/g)]
    .map((m) => m[1] ?? "")
    .filter((target) => !/^[a-z]+:/i.test(target) && !target.startsWith("#"))
    .map((target) => target.replace(/#.*$/, ""));

const readme = readFileSync(join(repoRoot, "README.md"), "utf8");
const blocks = fencedBlocks(readme, "sh test");
const hostingBlocks = fencedBlocks(readme, "sh test-hosting");

/** A clone as a newcomer has it: the sources, without local data; dependencies linked. */
function copyOfRepository(): string {
  const dir = mkdtempSync(join(tmpdir(), "actuate-readme-"));
  const skipped = new Set(["node_modules", ".data", ".git", ".bench"].map((name) => join(repoRoot, name)));
  cpSync(repoRoot, dir, { recursive: true, filter: (source) => !skipped.has(source) });
  symlinkSync(join(repoRoot, "node_modules"), join(dir, "node_modules"));
  return dir;
}

/** A newcomer's environment: the settings that change where the server keeps things or listens are unset. */
const freshEnv = Object.fromEntries(
  [
    "DATA_DIR",
    "DATABASE_URL",
    "SERVICE_KEYS",
    "HOST",
    "PORT",
    "PUBLIC_URL",
    "STORAGE",
    "WAIT_MS",
    "SERVICE_URL",
    "SERVE_ENVIRONMENTS",
    "TRUST_PROXY",
    "HANDLE",
  ].map((name) => [name, undefined]),
);

interface ScriptRun {
  /** Output by block index, for the blocks that started. */
  outputs: string[];
  /** How many blocks ran to their end. */
  finished: number;
  /** How bash ended: its exit code, or the signal that stopped it (the deadline). */
  ended: number | string | null;
}

/** Runs `blocks` in one bash in `dir`, each block's code as `rewrite` gives it. */
async function runBlocks(dir: string, blocks: Block[], rewrite: (code: string) => string): Promise<ScriptRun> {
  const script = [
    "set -euo pipefail",
    "exec 2>&1",
    `trap 'printf "\\n[failed: %s]\\n" "$BASH_COMMAND"' ERR`,
    ...blocks.flatMap((block, index) => [`printf '\\n${MARK} ${index}\\n'`, rewrite(block.code)]),
    `printf '\\n${MARK} end\\n'`,
  ].join("\n");
  const proc = Bun.spawn(["bash", "-c", script], { cwd: dir, env: { ...process.env, ...freshEnv }, stdout: "pipe" });
  const deadline = setTimeout(() => proc.kill("SIGKILL"), SCRIPT_DEADLINE_MS);
  const output = await new Response(proc.stdout).text();
  await proc.exited;
  clearTimeout(deadline);
  const parts = output.split(new RegExp(`\\n${MARK} (\\d+|end)\\n`));
  // parts: [before the first mark, "0", output of block 0, "1", output of block 1, …, "end", ""]
  const outputs: string[] = [];
  for (let i = 1; i < parts.length; i += 2) if (parts[i] !== "end") outputs.push(parts[i + 1] ?? "");
  const finished = parts.at(-2) === "end" ? outputs.length : outputs.length - 1;
  return { outputs, finished, ended: proc.exitCode ?? proc.signalCode };
}

/** `bun run dev` in `dir` with `env`, answering /healthz. */
async function dev(dir: string, env: Record<string, string | undefined>): Promise<ServerProcess> {
  const server = await serve(["dev"], { ...freshEnv, ...env }, { command: ["bun", "run"], cwd: dir });
  const health = await fetch(`${server.url}/healthz`).catch((error: Error) => error);
  if (!(health instanceof Response) || health.status !== 200) {
    const answer = health instanceof Response ? health.status : health.message;
    throw new Error(`bun run dev does not answer /healthz (${answer}); its output:\n${server.output()}`);
  }
  return server;
}

/**
 * A test per block: it ran to its end and its output holds what its `# →` lines say (as `rewrite` gives
 * them, like the code), in order.
 */
function blockTests(blocks: Block[], ran: () => ScriptRun, rewrite: (text: string) => string = (text) => text) {
  for (const [index, block] of blocks.entries()) {
    test(`block at README.md:${block.line} (${block.heading}) runs as pasted and answers what it says`, () => {
      const run = ran();
      const output = run.outputs[index];
      if (output === undefined) throw new Error("not run: an earlier block failed");
      if (index >= run.finished) {
        throw new Error(`README.md:${block.line} failed (bash ended: ${run.ended}); its output:\n${output}`);
      }
      let from = 0;
      for (const text of block.expected) {
        const at = output.indexOf(rewrite(text), from);
        if (at === -1) throw new Error(`README.md:${block.line} should answer ${text}; its output:\n${output}`);
        from = at + rewrite(text).length;
      }
    });
  }
}

describe("README", () => {
  let dir: string;
  let server: ServerProcess | undefined;
  let run: ScriptRun;
  let hostingRun: ScriptRun;
  let hostingPort: number;
  /** Where the first server (single mode) served. */
  let singleUrl: string;

  beforeAll(async () => {
    dir = copyOfRepository();
    server = await dev(dir, { PORT: "0" });
    singleUrl = server.url;
    run = await runBlocks(dir, blocks, (code) => code.replace(BASE_LINE, `BASE=${singleUrl}`));
    // "Host several environments": the same folder served again in hosting mode, as the README says.
    await server.kill();
    hostingPort = freePort();
    const serviceUrl = HOSTING_START.exec(readme)?.[1] as string;
    server = await dev(dir, {
      PORT: String(hostingPort),
      SERVICE_URL: serviceUrl.replace(SERVICE, `actuate.localhost:${hostingPort}`),
    });
    hostingRun = await runBlocks(dir, hostingBlocks, (code) =>
      code.replaceAll(SERVICE, `actuate.localhost:${hostingPort}`),
    );
  }, 150_000);

  afterAll(async () => {
    await server?.kill();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test("has blocks to run, each stating what it answers", () => {
    expect(blocks.length).toBeGreaterThan(5);
    expect(blocks.filter((block) => block.expected.length === 0).map((block) => block.line)).toEqual([]);
  });

  test("names the server once, as BASE, so the blocks run against a server on another port", () => {
    const [first, ...rest] = blocks;
    expect(first?.code).toMatch(BASE_LINE);
    const named = blocks.flatMap((block) =>
      block.code.split("\n").filter((line) => line.includes("127.0.0.1:3000") && !BASE_LINE.test(line)),
    );
    expect(named).toEqual([]);
    expect(rest.filter((block) => BASE_LINE.test(block.code)).map((block) => block.line)).toEqual([]);
    expect(new URL(singleUrl).port).not.toBe("3000");
  });

  test("each TypeScript snippet imports what it uses of actuate and actuate/client", () => {
    const exported = [...Object.keys(sdk), ...Object.keys(client)];
    const unimported = fencedBlocks(readme, "ts").flatMap((block) => {
      const imported = [...block.code.matchAll(/^import \{([^}]*)\} from "actuate[^"]*";$/gm)].flatMap((m) =>
        (m[1] ?? "").split(",").map((name) => name.trim()),
      );
      const used = exported.filter((name) => new RegExp(`\\b${name}\\s*[(.]`).test(block.code));
      return used.filter((name) => !imported.includes(name)).map((name) => `README.md:${block.line}: ${name}`);
    });
    expect(unimported).toEqual([]);
  });

  test("links only to files inside the repository that exist", () => {
    for (const file of ["README.md", "docs/API.md"]) {
      const text = readFileSync(join(repoRoot, file), "utf8");
      for (const link of relativeLinks(text)) {
        const target = resolve(repoRoot, file, "..", link);
        expect({
          file,
          link,
          inside: !relative(repoRoot, target).startsWith(".."),
          exists: existsSync(target),
        }).toEqual({ file, link, inside: true, exists: true });
      }
    }
  });

  blockTests(blocks, () => run);

  test("hosting: starts as SERVICE_URL=http://actuate.localhost:3000 bun run dev, and its blocks reach only the service's hosts", () => {
    expect(readme).toMatch(HOSTING_START);
    expect(hostingBlocks.length).toBeGreaterThan(1);
    expect(hostingBlocks.filter((block) => block.expected.length === 0).map((block) => block.line)).toEqual([]);
    const hosts = hostingBlocks.flatMap((block) => [...block.code.matchAll(/https?:\/\/([^/\s]+)/g)].map((m) => m[1]));
    expect(hosts.length).toBeGreaterThan(0);
    expect(hosts.filter((host) => host !== SERVICE && !host?.endsWith(`.${SERVICE}`))).toEqual([]);
    expect(hostingPort).not.toBe(3000);
  });

  blockTests(
    hostingBlocks,
    () => hostingRun,
    (text) => text.replaceAll(SERVICE, `actuate.localhost:${hostingPort}`),
  );
});
