import { join } from "node:path";
import type { Subprocess } from "bun";

export const repoRoot = join(import.meta.dir, "..", "..");

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `bun src/cli/main.ts …` the way `bun run <script>` does, from the repository root. */
export async function cli(args: string[], env: Record<string, string>): Promise<CliResult> {
  const proc = Bun.spawn(["bun", "src/cli/main.ts", ...args], {
    cwd: repoRoot,
    env: { ...process.env, ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  return { code, stdout, stderr };
}

export interface ServerProcess {
  url: string;
  proc: Subprocess<"ignore", "pipe", "pipe">;
  output: () => string;
  /** Resolves when the server prints `pattern` after offset `from` (default: the output so far does not count). */
  waitFor(pattern: RegExp, timeoutMs?: number, from?: number): Promise<string>;
  kill(): Promise<void>;
}

/**
 * Starts `bun run dev|start` on a free port and resolves once it serves; `command` and `cwd` run it
 * another way (e.g. `bun run dev` in a copy of the repository).
 */
export async function serve(
  args: string[],
  env: Record<string, string | undefined>,
  { command = ["bun", "src/cli/main.ts"], cwd = repoRoot }: { command?: string[]; cwd?: string } = {},
): Promise<ServerProcess> {
  const proc = Bun.spawn([...command, ...args], {
    cwd,
    env: { ...process.env, PORT: "0", ...env },
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
  const line = await waitFor(/actuate serving (http:\/\/\S+)/);
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
