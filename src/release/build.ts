import { relative, sep } from "node:path";
import { SDK_SPECIFIER } from "./bundle-format.ts";
import { sha256Hex } from "./canonical-json.ts";
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
      (log) => `  ${log.message}${log.position ? ` (${log.position.file}:${log.position.line})` : ""}`,
    );
    throw new ReleaseError(`release ${source.dir} does not build:\n${messages.join("\n")}`);
  }
  // Bun names each inlined file in a comment relative to the working directory; make the bundle
  // (and so its hash) the same wherever it is built from.
  const fromCwd = relative(process.cwd(), source.dir).split(sep).join("/");
  const code = fromCwd ? (await output.text()).replaceAll(`\n// ${fromCwd}/`, "\n// ") : await output.text();
  return { code, hash: sha256Hex(code) };
}
