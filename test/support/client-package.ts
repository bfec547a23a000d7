import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { buildClientPackage, packClientPackage } from "../../tools/client-package.ts";
import { type CliResult, repoRoot, runCommand } from "./cli.ts";

export interface PackedClient {
  /** The tarball `npm pack` made of the built package. */
  tarball: string;
  bytes: number;
  remove(): void;
}

/** Builds the client package (as `bun run build:client` does, into a folder of its own) and packs it. */
export async function packedClient(): Promise<PackedClient> {
  const dir = mkdtempSync(join(tmpdir(), "actuate-client-package-"));
  await buildClientPackage(join(dir, "package"));
  const { tarball, bytes } = await packClientPackage(dir, join(dir, "package"));
  return { tarball, bytes, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Packages of the repository's node_modules an app would install from a registry, copied in after npm ran. */
export type Borrowed = "ws" | "@types/ws" | "react" | "@types/react" | "csstype" | "@types/node" | "undici-types";

export interface PackageProject {
  dir: string;
  write(path: string, text: string): void;
  run(command: string[], env?: Record<string, string>): Promise<CliResult>;
  /** The repository's TypeScript (what `bun run typecheck` uses) over the project's `config`. */
  tsc(config: string): Promise<CliResult>;
  remove(): void;
}

/**
 * An app's project outside the checkout (`"type": "module"`) that installed the tarball with npm,
 * offline: the tarball has no dependencies. `borrowed` packages are copied from the repository's
 * node_modules afterwards (npm would prune them as extraneous before).
 */
export async function projectWithPackage(
  name: string,
  tarball: string,
  borrowed: Borrowed[] = [],
): Promise<PackageProject> {
  const dir = mkdtempSync(join(tmpdir(), `actuate-${name}-`));
  const write = (path: string, text: string) => {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  };
  const run = (command: string[], env: Record<string, string> = {}) => runCommand(command, dir, env);
  write("package.json", JSON.stringify({ name, private: true, type: "module" }));
  const installed = await run(["npm", "install", "--offline", "--no-audit", "--no-fund", tarball]);
  if (installed.code !== 0) throw new Error(`npm install ${tarball} failed:\n${installed.stdout}${installed.stderr}`);
  for (const pkg of borrowed) {
    cpSync(join(repoRoot, "node_modules", pkg), join(dir, "node_modules", pkg), { recursive: true, dereference: true });
  }
  return {
    dir,
    write,
    run,
    tsc: (config) => run(["bun", join(repoRoot, "node_modules", "typescript", "bin", "tsc"), "-p", config]),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
