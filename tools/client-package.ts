// Builds the client SDK as a package an app installs: `bun run build:client` writes dist/client-package/
// (JavaScript, declarations, package.json, README.md); `npm pack` there makes the tarball. The repository's
// own code keeps importing the sources (the root package.json's `exports`).
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { basename, join, relative } from "node:path";
import { gzipSync } from "node:zlib";

const root = join(import.meta.dir, "..");
export const PACKAGE_DIR = join(root, "dist", "client-package");

/** The package's entries: the name an app imports, its source, and the JavaScript file it becomes. */
const ENTRIES = [
  { subpath: "./client", source: "src/client/index.ts", file: "client.js", types: "types/client/index.d.ts" },
  { subpath: "./react", source: "src/client/react.ts", file: "react.js", types: "types/client/react.d.ts" },
] as const;
/** What the built JavaScript may import besides its own files: React, for `actuate/react` only. */
const EXTERNAL = ["react", "react/jsx-runtime"];

/** Writes the package into `dir` (emptied first); answers the files written, relative to it. */
export async function buildClientPackage(dir = PACKAGE_DIR): Promise<string[]> {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  await writeJavaScript(dir);
  await writeDeclarations(dir);
  writeFileSync(join(dir, "package.json"), `${JSON.stringify(manifest(), null, 2)}\n`);
  writeFileSync(join(dir, "README.md"), readme());
  return filesUnder(dir).map((file) => relative(dir, file));
}

/** Bundled from the two entries (the bundler follows their imports), not minified so people can read it. */
async function writeJavaScript(dir: string) {
  const built = await Bun.build({
    entrypoints: ENTRIES.map((entry) => join(root, entry.source)),
    root: join(root, "src", "client"),
    target: "browser",
    format: "esm",
    splitting: true,
    external: EXTERNAL,
  });
  if (!built.success) throw new AggregateError(built.logs, "the client package's JavaScript did not build");
  const written = new Map<string, string>();
  for (const output of built.outputs) {
    const entry = ENTRIES.find((e) => output.path === `./${basename(e.source, ".ts")}.js`);
    written.set(entry?.file ?? output.path.slice(2), await output.text());
  }
  const transpiler = new Bun.Transpiler({ loader: "js" });
  for (const [file, code] of written) {
    for (const { path } of transpiler.scanImports(code)) {
      const own = path.startsWith("./") && written.has(path.slice(2));
      if (!own && !(file === "react.js" && EXTERNAL.includes(path))) {
        throw new Error(`${file} imports ${path}: the package has no dependencies (React only for actuate/react)`);
      }
    }
    writeFileSync(join(dir, file), code);
  }
}

/**
 * The sources' declarations (and those of the `src/wire/` types they import), by the repository's
 * TypeScript with the DOM's types and none of Bun's or Node's. It keeps `.ts` in relative specifiers,
 * which resolvers before TypeScript 5 refuse: they become `.js`, as the files are named once built. The
 * options are the repository's (its bodies are not written for exactOptionalPropertyTypes); the emitted
 * declarations are what an app checks, strictest, in test/process/client-package.test.ts.
 */
async function writeDeclarations(dir: string) {
  const out = join(dir, "types");
  const tsc = Bun.spawn(
    [
      ...["bun", join(root, "node_modules", "typescript", "bin", "tsc"), "--ignoreConfig"],
      ...["--declaration", "--emitDeclarationOnly", "--rootDir", join(root, "src"), "--outDir", out],
      ...["--target", "esnext", "--module", "preserve", "--moduleResolution", "bundler", "--strict"],
      ...["--allowImportingTsExtensions", "--verbatimModuleSyntax", "--lib", "esnext,dom", "--types", ""],
      ...ENTRIES.map((entry) => join(root, entry.source)),
    ],
    { cwd: root, stdout: "pipe", stderr: "pipe" },
  );
  const [stdout, stderr, code] = await Promise.all([
    new Response(tsc.stdout).text(),
    new Response(tsc.stderr).text(),
    tsc.exited,
  ]);
  if (code !== 0) throw new Error(`tsc could not write the client's declarations:\n${stdout}${stderr}`);
  for (const file of filesUnder(out)) {
    const text = readFileSync(file, "utf8");
    writeFileSync(file, text.replace(/((?:from|import\()\s*)(["'])(\.\.?\/[^"']+)\.ts\2/g, "$1$2$3.js$2"));
  }
}

function manifest() {
  const { version } = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string };
  return {
    name: "actuate",
    version,
    description: "The client of an Actuate environment: actions, live queries, files (browsers, Node ≥ 20, Bun, Deno)",
    type: "module",
    sideEffects: false,
    exports: Object.fromEntries(
      ENTRIES.map((entry) => [
        entry.subpath,
        { types: `./${entry.types}`, import: `./${entry.file}`, default: `./${entry.file}` },
      ]),
    ),
    peerDependencies: { react: ">=18" },
    peerDependenciesMeta: { react: { optional: true } },
    engines: { node: ">=20" },
  };
}

const readme = () => `# actuate

The client of an Actuate environment: typed action calls, live queries,
workflow runs and files. For browsers, Node ≥ 20, Bun and Deno; no dependencies.

\`\`\`js
import { createClient } from "actuate/client";

const client = createClient({ url: "https://api.example.com", token: "…" });
const { output } = await client.invoke("notes.add", { title: "hello" });
const stop = client.subscribe({ notes: {} }, (result) => console.log(result.notes));
\`\`\`

- Node 20 has no global \`WebSocket\`: pass one, e.g. the \`ws\` package's:
  \`createClient({ url, token, WebSocket })\` with \`import { WebSocket } from "ws"\`.
- Types: \`createClient<Release>()\` checks calls against a \`Release\` type, written by hand or by
  \`bun run release types --out src/actuate.gen.ts\` (in the environment's Actuate checkout).
- React (optional peer dependency): \`import { useQuery, useAction } from "actuate/react"\`.
`;

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" })
    .map((name) => join(dir, name))
    .filter((file) => statSync(file).isFile())
    .sort();
}

/** Packs the built package with npm into `destination`; answers the tarball's path and size. */
export async function packClientPackage(destination: string, dir = PACKAGE_DIR) {
  const npm = Bun.spawn(["npm", "pack", "--json", "--pack-destination", destination], {
    cwd: dir,
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(npm.stdout).text(),
    new Response(npm.stderr).text(),
    npm.exited,
  ]);
  if (code !== 0) throw new Error(`npm pack failed:\n${stderr}`);
  const [packed] = JSON.parse(stdout) as { filename: string; size: number }[];
  if (!packed) throw new Error(`npm pack answered nothing:\n${stdout}`);
  return { tarball: join(destination, packed.filename), bytes: packed.size };
}

/** The size of `actuate/client` as a bundler ships it from the package: minified, then gzip. */
export async function shippedClientSize(dir = PACKAGE_DIR) {
  const built = await Bun.build({ entrypoints: [join(dir, "client.js")], target: "browser", minify: true });
  if (!built.success) throw new AggregateError(built.logs, "the package's client.js did not bundle");
  const code = await (built.outputs[0] as Blob).text();
  return { minified: code.length, gzip: gzipSync(code, { level: 9 }).byteLength };
}

if (import.meta.main) {
  const files = await buildClientPackage();
  for (const file of files) {
    console.log(`${relative(root, join(PACKAGE_DIR, file)).padEnd(52)} ${statSync(join(PACKAGE_DIR, file)).size} B`);
  }
  const { minified, gzip } = await shippedClientSize();
  console.log(`actuate/client as shipped: ${minified} B minified, ${gzip} B gzip`);
  console.log(`To pack it: cd ${relative(process.cwd(), PACKAGE_DIR) || "."} && npm pack`);
}
