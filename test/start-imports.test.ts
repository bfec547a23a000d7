import { describe, expect, test } from "bun:test";
import { dirname, join, relative, resolve } from "node:path";

/**
 * What a server loads before it answers its first request: the modules `src/cli/main.ts` reaches through
 * static imports. Cold start and idle memory have budgets (issue 14: ≤ 200 ms, ≤ 60 MB, `bun bench/start.ts`),
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

/**
 * Node built-ins whose import costs a start memory: node:crypto loads Node's streams (~2 MiB, ~10-60 ms
 * measured), and Web Crypto and Bun.CryptoHasher do the same work without them; node:fs/promises (~1.5 MiB
 * of a start from source) loads with the first file operation (files/disk.ts).
 */
const BUILTINS_NOT_AT_START = ["node:crypto", "node:stream", "node:fs/promises", "crypto", "stream", "fs/promises"];

const START_ENTRIES = ["src/cli/main.ts"];

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

  test("a start imports neither node:crypto, node:stream nor node:fs/promises", async () => {
    const { builtins } = await reached(...START_ENTRIES);
    expect([...builtins].filter((name) => BUILTINS_NOT_AT_START.includes(name))).toEqual([]);
  });

  test("the console is an HTML import: neither its code nor preact is a module start imports", async () => {
    const { files, packages } = await reached(...START_ENTRIES);
    expect([...files].filter((file) => file.startsWith("src/console/"))).toEqual([]);
    expect([...packages.static, ...packages.dynamic].filter((p) => isOneOf(p, ["preact"]))).toEqual([]);
    // Still served: src/http/console.ts hands the page to Bun.serve, which bundles it on the first request.
    expect(files.has("src/http/console.ts")).toBe(true);
  });
});
