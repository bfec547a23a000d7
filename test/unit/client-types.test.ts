import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cli, repoRoot, runCommand } from "../support/cli.ts";

// The type tests of actuate/client: files of cases that must compile and `@ts-expect-error` cases that must
// not (an unused one is itself an error), against the Release type generated here from a fixture release
// (committed too: test/http/client-typed-queries.test.ts uses it, and checks that an environment answers the same).
const typesDir = join(repoRoot, "test", "fixtures", "types");
const tsc = (project: string) =>
  runCommand(["bun", join(repoRoot, "node_modules", "typescript", "bin", "tsc"), "-p", project], repoRoot);

describe("actuate/client's types from a generated Release", () => {
  let scratch: string;
  beforeAll(async () => {
    scratch = mkdtempSync(join(tmpdir(), "actuate-client-types-"));
    const generated = await cli(
      ["release", "types", "test/fixtures/releases/typed-client", "--out", join(typesDir, "release.gen.ts")],
      { DATA_DIR: join(scratch, "data") },
    );
    expect(generated.stderr).toBe("");
    expect(generated.code).toBe(0);
  }, 60_000);
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  test("typed queries, links by cardinality, where, $ options, file inputs and useQuery: every case as expected", async () => {
    const checked = await tsc(typesDir);
    expect(checked.stdout + checked.stderr).toBe("");
    expect(checked.code).toBe(0);
  }, 60_000);

  test("a case that must fail, without its @ts-expect-error, fails: an unknown link", async () => {
    const cases = readFileSync(join(typesDir, "queries.ts"), "utf8")
      .replaceAll('"../../../src/client/', `"${repoRoot}/src/client/`)
      .replaceAll('"./', `"${typesDir}/`)
      .replace("  // @ts-expect-error an unknown link\n", "");
    writeFileSync(join(scratch, "queries.ts"), cases);
    writeFileSync(
      join(scratch, "tsconfig.json"),
      JSON.stringify({ extends: join(typesDir, "tsconfig.json"), include: ["queries.ts"] }),
    );
    const checked = await tsc(scratch);
    expect(checked.code).not.toBe(0);
    const errors = checked.stdout.split("\n").filter((line) => /error TS\d+/.test(line));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toContain("'readers' does not exist");
  }, 60_000);

  test("the README's client examples type-check as written against release v1's types (the line meant to fail fails)", async () => {
    const readme = readFileSync(join(repoRoot, "README.md"), "utf8");
    const section = readme.slice(
      readme.indexOf("## From a program: `actuate/client`"),
      readme.indexOf("## The console"),
    );
    const [typed, react] = [...section.matchAll(/```tsx?\n([\s\S]*?)```/g)].map((m) => m[1] ?? "");
    const dir = join(scratch, "readme");
    mkdirSync(dir, { recursive: true });
    const generated = await cli(["release", "types", "releases/v1", "--out", join(dir, "actuate.gen.ts")], {
      DATA_DIR: join(scratch, "data"),
    });
    expect(generated.code).toBe(0);
    // What the examples leave to the reader: where the token comes from, what the component shows.
    writeFileSync(join(dir, "typed.ts"), `const getToken = () => "a token";\n${typed}`);
    const shown =
      "  return [connection, isLoading, error?.code, data?.notes.length, pages.status, add.running].join();\n";
    const preamble = `import { createClient } from "actuate/client";\nimport type { Release } from "./actuate.gen.ts";\nconst client = createClient<Release>({ url: "http://127.0.0.1:3000", token: "t" });\n`;
    writeFileSync(join(dir, "react.ts"), `${preamble}${react?.replace("  …\n", shown)}`);
    const types = join(repoRoot, "node_modules", "@types", "react");
    writeFileSync(
      join(dir, "tsconfig.json"),
      JSON.stringify({
        extends: join(typesDir, "tsconfig.json"),
        compilerOptions: {
          paths: {
            "actuate/client": [join(repoRoot, "src", "client", "index.ts")],
            "actuate/react": [join(repoRoot, "src", "client", "react.ts")],
            react: [types],
          },
        },
        include: ["*.ts"],
      }),
    );
    const checked = await tsc(dir);
    const errors = checked.stdout.split("\n").filter((line) => /error TS\d+/.test(line));
    expect(errors.join("\n")).toContain("'titel' does not exist");
    expect(errors).toHaveLength(1);
  }, 60_000);
});
