import { relative, resolve, sep } from "node:path";
import { sha256Hex } from "../lib/canonical-json.ts";
import { SDK_SPECIFIER } from "./bundle-format.ts";
import { ReleaseError } from "./errors.ts";
import type { ReleaseSource } from "./source.ts";

export interface BuiltBundle {
  code: string;
  /** sha256 of `code`: the identity of a release's content. */
  hash: string;
}

const ENTRY = "actuate-release-entry";

/**
 * Bundles a release folder into one ES module whose default export is `{ release, actions }`.
 * The SDK stays external (see bundle-format.ts); everything else the release imports is inlined.
 */
export async function buildBundle(source: ReleaseSource): Promise<BuiltBundle> {
  const entry = [
    source.releaseFile ? `import release from ${JSON.stringify(source.releaseFile)};` : "const release = undefined;",
    ...source.actions.map(([, file], i) => `import a${i} from ${JSON.stringify(file)};`),
    `export default { release, actions: { ${source.actions.map(([name], i) => `${JSON.stringify(name)}: a${i}`).join(", ")} } };`,
  ].join("\n");

  const result = await Bun.build({
    entrypoints: [ENTRY],
    target: "bun",
    format: "esm",
    // Stack traces of release code then name its files and lines (see withPortableSourceMap).
    sourcemap: "inline",
    throw: false,
    plugins: [
      {
        name: "actuate-release-build",
        setup(build) {
          build.onResolve({ filter: /^actuate$/ }, () => ({ path: SDK_SPECIFIER, external: true }));
          build.onResolve({ filter: new RegExp(`^${ENTRY}$`) }, () => ({ path: "entry", namespace: ENTRY }));
          build.onLoad({ filter: /.*/, namespace: ENTRY }, () => ({ contents: entry, loader: "ts" }));
        },
      },
    ],
  });
  const output = result.outputs[0];
  if (!result.success || !output) {
    const messages = result.logs.map(
      (log) => `  ${where(source.dir, log.position)}${log.message}${excerpt(log.position)}`,
    );
    throw new ReleaseError(`release ${source.dir} does not build:\n${messages.join("\n")}`);
  }
  // Bun names each inlined file in a comment relative to the working directory; make the bundle
  // (and so its hash) the same wherever it is built from.
  const fromCwd = relative(process.cwd(), source.dir).split(sep).join("/");
  const text = withPortableSourceMap(await output.text(), source.dir);
  const code = fromCwd ? text.replaceAll(`\n// ${fromCwd}/`, "\n// ") : text;
  return { code, hash: sha256Hex(code) };
}

const SOURCE_MAP = /\n\/\/# debugId=\S+|\n\/\/# sourceMappingURL=data:application\/json;base64,(\S+)/g;

/**
 * Rewrites Bun's inline source map so the bundle is the same wherever it is built: sources relative to
 * the release folder (Bun writes them relative to the working directory), without their text or the
 * build's debug id. A loaded bundle's stack frames then read `…/bundles/actions/<domain>/<file>.ts:line`.
 */
function withPortableSourceMap(code: string, dir: string): string {
  return code.replace(SOURCE_MAP, (_, encoded: string | undefined) => {
    if (encoded === undefined) return "";
    const map = JSON.parse(Buffer.from(encoded, "base64").toString()) as { sources: string[]; debugId?: string };
    const sources = map.sources.map((s) => (s.includes(":") ? s : relative(dir, resolve(s)).split(sep).join("/")));
    // Bun needs sourcesContent to decode the map; nulls keep the bundle free of a second copy of the code.
    const portable = { ...map, sources, sourcesContent: sources.map(() => null), debugId: undefined };
    return `\n//# sourceMappingURL=data:application/json;base64,${Buffer.from(JSON.stringify(portable)).toString("base64")}`;
  });
}

type Position = { file: string; line: number; column: number; lineText: string } | null;

/** `actions/x/y.ts:4:24: ` for a build message about a file of the release. */
const where = (dir: string, position: Position) =>
  position ? `${relative(dir, position.file).split(sep).join("/")}:${position.line}:${position.column}: ` : "";

/** The offending line under the message, as compilers show it. */
const excerpt = (position: Position) => (position?.lineText ? `\n      ${position.lineText.trim()}` : "");
