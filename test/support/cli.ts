import { join } from "node:path";
import type { Subprocess } from "bun";

export const repoRoot = join(import.meta.dir, "..", "..");

/** How the CLI is run: from source in the repository (the default), or e.g. a compiled binary elsewhere. */
export interface Launch {
  command: string[];
  cwd: string;
}

const fromSource: Launch = { command: ["bun", "src/cli/main.ts"], cwd: repoRoot };

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end and answers its exit code and output. */
export async function runCommand(command: string[], cwd: string, env: Record<string, string> = {}): Promise<CliResult> {
  const proc = Bun.spawn(command, { cwd, env: { ...process.env, ...env }, stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  return { code, stdout, stderr };
}

/** Runs the CLI once, by default `bun src/cli/main.ts …` from the repository root as `bun run <script>` does. */
export const cli = (args: string[], env: Record<string, string>, launch = fromSource): Promise<CliResult> =>
  runCommand([...launch.command, ...args], launch.cwd, env);

export interface ServerProcess {
  url: string;
  proc: Subprocess<"ignore", "pipe", "pipe">;
  output: () => string;
  /** Resolves when the server prints `pattern` after offset `from` (default: the output so far does not count). */
  waitFor(pattern: RegExp, timeoutMs?: number, from?: number): Promise<string>;
  kill(): Promise<void>;
}

/** Starts `dev` or `start` (by default `bun run dev|start`) on a free port and resolves once it serves. */
export async function serve(
  args: string[],
  env: Record<string, string | undefined>,
  launch = fromSource,
  startupMs = 15_000,
): Promise<ServerProcess> {
  const proc = Bun.spawn([...launch.command, ...args], {
    cwd: launch.cwd,
    // A test's SIGTERM stops at once unless it asks for the ready drain (test/process/drain.test.ts).
    env: { ...process.env, PORT: "0", DRAIN_READY_MS: "0", ...env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  let output = "";
  const waiters: { pattern: RegExp; from: number; resolve: (line: string) => void }[] = [];
  const check = () => {
    for (const w of [...waiters]) {
      const match = w.pattern.exec(output.slice(w.from));
      if (match) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(match[0]);
      }
    }
  };
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder();
    for await (const chunk of stream) {
      output += decoder.decode(chunk);
      check();
    }
  };
  void pump(proc.stdout);
  void pump(proc.stderr);
  const waitFor = (pattern: RegExp, timeoutMs = 15_000, from = output.length) =>
    new Promise<string>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no ${pattern} within ${timeoutMs} ms; output:\n${output}`)),
        timeoutMs,
      );
      waiters.push({
        pattern,
        from,
        resolve: (line) => {
          clearTimeout(timer);
          resolve(line);
        },
      });
      check();
    });
  void proc.exited.then(() => {
    output += `\n[exited ${proc.exitCode}]`;
    check();
  });
  const line = await waitFor(/actuate serving (http:\/\/\S+)/, startupMs);
  const url = line.replace("actuate serving ", "");
  return {
    url,
    proc,
    output: () => output,
    waitFor,
    async kill() {
      proc.kill("SIGTERM");
      await proc.exited;
    },
  };
}
