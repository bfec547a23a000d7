import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { type CliResult, repoRoot, runCommand } from "./cli.ts";

export interface ScratchProject {
  dir: string;
  /** Writes a file of the project (folders made as needed). */
  write(path: string, text: string): void;
  /** `tsc -p .` over the project's src/: its exit code and what it printed. */
  tsc(): Promise<CliResult>;
  run(command: string[], env?: Record<string, string>): Promise<CliResult>;
  remove(): void;
}

/**
 * A project outside the repository, as a user's: a strict tsconfig over `src/` with Bun's types, and
 * `node_modules` that is the repository's (`"repository"`) or holds only `actuate` (the repository as an
 * installed package) and `@types`.
 */
export function scratchProject(name: string, modules: "repository" | "actuate"): ScratchProject {
  const dir = mkdtempSync(join(tmpdir(), `actuate-${name}-`));
  mkdirSync(join(dir, "src"));
  if (modules === "repository") {
    symlinkSync(join(repoRoot, "node_modules"), join(dir, "node_modules"));
  } else {
    mkdirSync(join(dir, "node_modules"));
    symlinkSync(repoRoot, join(dir, "node_modules", "actuate"));
    symlinkSync(join(repoRoot, "node_modules", "@types"), join(dir, "node_modules", "@types"));
  }
  const write = (path: string, text: string) => {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  };
  write(
    "tsconfig.json",
    JSON.stringify({
      compilerOptions: {
        target: "ESNext",
        module: "Preserve",
        moduleResolution: "bundler",
        strict: true,
        noEmit: true,
        skipLibCheck: true,
        allowImportingTsExtensions: true,
        types: ["bun"],
      },
      include: ["src"],
    }),
  );
  return {
    dir,
    write,
    // The repository's TypeScript: `bunx tsc` in a project without it downloads it and says so on stdout.
    tsc: () => runCommand(["bun", join(repoRoot, "node_modules", "typescript", "bin", "tsc"), "-p", "."], dir),
    run: (command, env = {}) => runCommand(command, dir, env),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
