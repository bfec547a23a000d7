import { existsSync, statSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import { ReleaseError } from "./errors.ts";

export interface ReleaseSource {
  dir: string;
  /** `release.ts` (or `.js`), when the folder has one. */
  releaseFile: string | null;
  /** Action name (`<domain>.<action>`) → absolute file path, sorted by name. */
  actions: [name: string, file: string][];
}

const SEGMENT = /^[A-Za-z][A-Za-z0-9_-]{0,62}$/;
const SOURCE_FILE = /\.(ts|mts|js|mjs)$/;

/** Finds `release.ts` and `actions/<domain>/<action>.ts` in a release folder. */
export function readReleaseSource(dirPath: string): ReleaseSource {
  const dir = resolve(dirPath);
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new ReleaseError(`release folder not found: ${dirPath}`);
  const releaseFile = ["release.ts", "release.mts", "release.js"].map((f) => join(dir, f)).find((f) => existsSync(f));
  const actions: [string, string][] = [];
  const names = new Set<string>();
  for (const relative of new Bun.Glob("actions/*/*").scanSync({ cwd: dir, onlyFiles: true })) {
    const [, domain = "", file = ""] = relative.split(/[\\/]/);
    if (!SOURCE_FILE.test(file) || file.startsWith("_") || /\.(test|spec)\./.test(file)) continue;
    const action = file.replace(SOURCE_FILE, "");
    if (!SEGMENT.test(domain) || !SEGMENT.test(action)) {
      throw new ReleaseError(
        `${relative}: domain and action names must start with a letter and hold only letters, digits, "_" and "-"`,
      );
    }
    const name = `${domain}.${action}`;
    if (names.has(name))
      throw new ReleaseError(`action ${name} is defined by more than one file in actions/${domain}/`);
    names.add(name);
    actions.push([name, join(dir, relative)]);
  }
  if (actions.length === 0) throw new ReleaseError(`${dirPath} has no actions (expected actions/<domain>/<action>.ts)`);
  actions.sort(([a], [b]) => (a < b ? -1 : 1));
  return { dir, releaseFile: releaseFile ?? null, actions };
}

export const folderVersion = (source: ReleaseSource) => basename(source.dir);
