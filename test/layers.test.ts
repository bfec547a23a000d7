import { describe, expect, test } from "bun:test";
import { dirname, join, relative, resolve } from "node:path";
import { Glob } from "bun";

/**
 * Imports flow one way: adapters → engine → domain → store → lib. A module of `src/` is named by its
 * top-level folder (`http`, `engine`, …) or, at the root, by its file (`main`, `app`, `config`); the Bun
 * plugins of `plugins/` are one module, `plugins`. The `.ts` and `.tsx` files are read. A module
 * may import a module of a lower layer, or of its own layer as long as modules do not import each other
 * in a circle. Known debt is listed below, one entry per import, each saying why it is there: the test
 * fails on a new backward import, and on an entry that is no longer needed (so the list only shrinks).
 */
const LAYERS: Record<string, number> = {
  lib: 0, // pure helpers and the error table: import nothing of ours
  sdk: 0, // what release code imports as "actuate": types and define* functions
  client: 0, // "actuate/client", for browsers and other servers: imports nothing of the server
  config: 0, // the environment, read once
  observe: 0, // the server's log, metrics and tracer: every layer reports to it; it imports nothing of ours
  wire: 0, // the API's public shapes (statuses, page limits, answers): the server and the client share it; it imports nothing of ours
  store: 1,
  console: 1, // the web console, a browser page over "actuate/client": the server only serves it
  auth: 2,
  data: 2,
  files: 2,
  release: 2,
  variables: 2, // variables and secrets: names, a release's declarations, sealing (AES-256-GCM)
  engine: 3,
  http: 4,
  mcp: 4,
  live: 4,
  hosting: 4, // hosting mode's front door: which environment a request's host names (answers only its own refusals)
  app: 5,
  main: 6,
  runtime: 6, // composes an environment (engine, app, …) over the process's parts, and hosting mode's server
  startup: 6, // what start-up reaches (database, bucket, DATA_DIR), its failures named by the setting: main and cli
  cli: 7,
  plugins: 8, // what bunfig.toml preloads before anything of src/ loads: nothing imports it
};

/** Adapters speak for the engine: they read its views, not the store's rows. */
const ADAPTERS = new Set(["http", "mcp", "live"]);

const KNOWN_DEBT: Record<string, string> = {};

const ROOT = join(import.meta.dir, "..");

const moduleOf = (path: string) => {
  const [top, first, second] = path.split("/");
  if (top === "plugins") return top;
  return second === undefined ? (first as string).replace(/\.tsx?$/, "") : (first as string);
};

/** The folders whose imports are checked, and the files of each that are read. */
const SOURCES = ["src/**/*.{ts,tsx}", "plugins/**/*.ts"];

async function imports(): Promise<{ from: string; to: string }[]> {
  const found: { from: string; to: string }[] = [];
  const specifiers =
    /(?:^|\n)\s*(?:import|export)\b[^;"']*?(?:from\s*)?["'](\.[^"']+)["']|import\(\s*["'](\.[^"']+)["']\s*\)/g;
  for (const source of SOURCES) {
    for await (const from of new Glob(source).scan(ROOT)) {
      const text = await Bun.file(join(ROOT, from)).text();
      for (const m of text.matchAll(specifiers)) {
        const to = relative(ROOT, resolve(ROOT, dirname(from), (m[1] ?? m[2]) as string));
        // package.json is outside the layers.
        if (to.startsWith("src/") || to.startsWith("plugins/")) found.push({ from, to });
      }
    }
  }
  return found;
}

/** Modules that reach themselves through other modules' imports. */
function cycles(edges: Map<string, Set<string>>): string[][] {
  const found: string[][] = [];
  const visit = (path: string[]) => {
    for (const next of edges.get(path.at(-1) as string) ?? []) {
      if (next === path[0]) found.push([...path, next]);
      else if (!path.includes(next) && next > (path[0] as string)) visit([...path, next]);
    }
  };
  for (const start of edges.keys()) visit([start]);
  return found;
}

describe("import directions in src/ and plugins/", () => {
  test("every module is placed in a layer", async () => {
    const modules = new Set((await imports()).flatMap(({ from, to }) => [moduleOf(from), moduleOf(to)]));
    expect([...modules].filter((m) => LAYERS[m] === undefined)).toEqual([]);
  });

  test("no backward import, no adapter reading the store, no cycle between modules: beyond the known debt", async () => {
    const all = await imports();
    const used = new Set<string>();
    const wrong: string[] = [];
    const edges = new Map<string, Set<string>>();
    for (const { from, to } of all) {
      const [a, b] = [moduleOf(from), moduleOf(to)];
      if (a === b) continue;
      const key = `${from} -> ${to}`;
      if (KNOWN_DEBT[key]) {
        used.add(key);
        continue;
      }
      const backward = (LAYERS[a] as number) < (LAYERS[b] as number);
      const outOfLib = a === "lib";
      const adapterToStore = ADAPTERS.has(a) && b === "store";
      if (backward || outOfLib || adapterToStore) wrong.push(key);
      edges.set(a, (edges.get(a) ?? new Set()).add(b));
    }
    expect(wrong).toEqual([]);
    expect(cycles(edges).map((cycle) => cycle.join(" → "))).toEqual([]);
    expect(Object.keys(KNOWN_DEBT).filter((key) => !used.has(key))).toEqual([]);
  });

  test("the check sees a backward import and a cycle", () => {
    const edges = new Map([
      ["data", new Set(["release"])],
      ["release", new Set(["data"])],
    ]);
    expect(cycles(edges)).toEqual([["data", "release", "data"]]);
    expect(moduleOf("src/engine/workflows/worker.ts")).toBe("engine");
    expect(moduleOf("src/main.ts")).toBe("main");
    expect(moduleOf("src/console/main.tsx")).toBe("console");
    expect(moduleOf("plugins/release-loader.ts")).toBe("plugins");
  });
});
