import { describe, expect, test } from "bun:test";
import { dirname, join, relative, resolve } from "node:path";

/**
 * What a server loads before it answers its first request: the modules `src/cli/main.ts` reaches through
 * static imports, and `src/cli/serve.ts`, the one module `start` imports (each command loads its own). Cold start and idle memory have budgets (issue 14: ≤ 200 ms, ≤ 60 MB, `bun bench/start.ts`),
 * so the parts a SQLite server with disk storage may never use load on first use, through `import()`:
 * the PostgreSQL driver, the S3 driver, the MCP SDK, the multipart parser, jose and oidc-provider (the
 * built-in authority, on the first /oauth request or JWT), OpenTelemetry (only when traces are sent). A new heavy dependency joins
 * this list, or is loaded lazily too.
 */
const LOADED_ON_FIRST_USE = [
  "postgres",
  "drizzle-orm/postgres-js",
  "minio",
  "@modelcontextprotocol/sdk",
  "@fastify/busboy",
  // JWT verification (an identity provider's, or the built-in authority's) and the authority itself.
  "jose",
  "oidc-provider",
  // Tracing: only when OTEL_EXPORTER_OTLP_ENDPOINT is set (observe/otel.ts).
  "@opentelemetry/api",
  "@opentelemetry/core",
  "@opentelemetry/exporter-trace-otlp-http",
  "@opentelemetry/resources",
  "@opentelemetry/sdk-trace",
];

/** Our own modules a start does not read: publishing (the release builder, Bun.build) and the other commands. */
const OWN_LOADED_ON_FIRST_USE = [
  "src/release/publish.ts",
  "src/release/build.ts",
  "src/release/client-types.ts",
  "src/cli/release.ts",
  "src/cli/token.ts",
  "src/cli/user.ts",
  "src/cli/key.ts",
];

/**
 * Node built-ins whose import costs a start memory: node:crypto loads Node's streams (~2 MiB, ~10-60 ms
 * measured); Web Crypto and Bun.CryptoHasher do the same work without them.
 */
const BUILTINS_NOT_AT_START = ["node:crypto", "node:stream", "crypto", "stream"];

/** The command modules `start` runs: src/cli/commands.ts imports each one when its command runs. */
const START_ENTRIES = ["src/cli/main.ts", "src/cli/serve.ts"];

const ROOT = join(import.meta.dir, "..");
const transpiler = new Bun.Transpiler({ loader: "ts" });

/** The files of src/ (and plugins/) reached from `entry`, and the packages they import, by import kind. */
async function reached(...entries: string[]) {
  const files = new Set<string>();
  const packages = { static: new Set<string>(), dynamic: new Set<string>() };
  const builtins = new Set<string>();
  const dynamicFiles = new Set<string>();
  const visit = async (file: string) => {
    if (files.has(file)) return;
    files.add(file);
    // scanImports leaves out type-only imports: they load nothing.
    for (const { kind, path } of transpiler.scanImports(await Bun.file(join(ROOT, file)).text())) {
      const isDynamic = kind === "dynamic-import";
      if (path.startsWith(".")) {
        const target = relative(ROOT, resolve(ROOT, dirname(file), path));
        if (!target.endsWith(".ts")) continue;
        if (isDynamic) dynamicFiles.add(target);
        else await visit(target);
      } else if (path.startsWith("node:") || BUILTINS_NOT_AT_START.includes(path)) {
        if (!isDynamic) builtins.add(path);
      } else if (!path.startsWith("bun")) {
        (isDynamic ? packages.dynamic : packages.static).add(path);
      }
    }
  };
  for (const entry of entries) await visit(entry);
  return { files, packages, builtins, dynamicFiles };
}

const isOneOf = (specifier: string, names: string[]) =>
  names.some((name) => specifier === name || specifier.startsWith(`${name}/`));

describe("what start loads", () => {
  test("start imports its command module on demand: the CLI's entry reaches no server module statically", async () => {
    const cli = await reached("src/cli/main.ts");
    expect(cli.files.has("src/main.ts")).toBe(false);
    expect(cli.dynamicFiles.has("src/cli/serve.ts")).toBe(true);
  });

  test("a start reaches none of the drivers and SDKs a server may never use through a static import", async () => {
    const { files, packages, dynamicFiles } = await reached(...START_ENTRIES);
    expect(files.has("src/main.ts")).toBe(true);
    expect([...packages.static].filter((p) => isOneOf(p, LOADED_ON_FIRST_USE))).toEqual([]);
    // Each is still reached, through an import() of a package or of a module that imports it: the list
    // names what start really defers.
    const deferred = [...packages.dynamic];
    for (const file of dynamicFiles) if (!files.has(file)) deferred.push(...(await reached(file)).packages.static);
    expect(LOADED_ON_FIRST_USE.filter((name) => deferred.some((p) => isOneOf(p, [name])))).toEqual(LOADED_ON_FIRST_USE);
  });

  test("a start reads neither the release builder nor the other commands, and no node:crypto", async () => {
    const { files, builtins, dynamicFiles } = await reached(...START_ENTRIES);
    expect(OWN_LOADED_ON_FIRST_USE.filter((file) => files.has(file))).toEqual([]);
    expect([...builtins].filter((name) => BUILTINS_NOT_AT_START.includes(name))).toEqual([]);
    // Still reached on first use (publishing with --release or dev, the other commands), so the list stays true.
    const later = new Set<string>();
    for (const file of dynamicFiles) for (const each of (await reached(file)).files) later.add(each);
    expect(OWN_LOADED_ON_FIRST_USE.filter((file) => !later.has(file))).toEqual([]);
  });

  test("the console is an HTML import: neither its code nor preact is a module start imports", async () => {
    const { files, packages } = await reached(...START_ENTRIES);
    expect([...files].filter((file) => file.startsWith("src/console/"))).toEqual([]);
    expect([...packages.static, ...packages.dynamic].filter((p) => isOneOf(p, ["preact"]))).toEqual([]);
    // Still served: src/http/console.ts hands the page to Bun.serve, which bundles it on the first request.
    expect(files.has("src/http/console.ts")).toBe(true);
  });
});
