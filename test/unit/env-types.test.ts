import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cli, repoRoot, runCommand } from "../support/cli.ts";

const scratch = mkdtempSync(join(tmpdir(), "actuate-env-types-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const tsc = (project: string) =>
  runCommand(["bun", join(repoRoot, "node_modules", "typescript", "bin", "tsc"), "-p", project], repoRoot);

/** A project of its own: "actuate" is the SDK, as in a release folder; `files` are checked. */
function project(files: string[]): string {
  const dir = mkdtempSync(join(scratch, "project-"));
  writeFileSync(
    join(dir, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        noEmit: true,
        module: "Preserve",
        moduleResolution: "bundler",
        target: "ESNext",
        skipLibCheck: true,
        allowImportingTsExtensions: true,
        types: [],
        paths: { actuate: [join(repoRoot, "src", "sdk", "index.ts")] },
      },
      files: files.map((file) => join(scratch, file)),
    }),
  );
  return dir;
}

describe("release types: ctx.env typed from the release's declarations", () => {
  test("declared names are strings in ctx.env; without the generated file they may be undefined", async () => {
    const out = join(scratch, "release.gen.ts");
    const generated = await cli(["release", "types", "test/fixtures/releases/variables", "--out", out], {
      DATA_DIR: join(scratch, "data"),
    });
    expect(generated.stderr).toBe("");
    expect(generated.code).toBe(0);
    const text = readFileSync(out, "utf8");
    expect(text).toContain('declare module "actuate" {\n  interface Env {\n    API_URL: string;\n    REGION: string;');
    expect(text).toContain("/** the payment provider's key */\n    STRIPE_KEY: string;");

    writeFileSync(
      join(scratch, "handler.ts"),
      `import type { ActionContext } from "actuate";
export const key = (ctx: ActionContext): string => ctx.env.STRIPE_KEY;
export const region = (ctx: ActionContext): string => ctx.env.REGION;
// @ts-expect-error a name the release does not declare may be unset
export const other = (ctx: ActionContext): string => ctx.env.OTHER;
`,
    );
    const typed = await tsc(project(["handler.ts", "release.gen.ts"]));
    expect(typed.stdout + typed.stderr).toBe("");
    expect(typed.code).toBe(0);

    const untyped = await tsc(project(["handler.ts"]));
    expect(untyped.stdout).toContain("handler.ts(2,");
    expect(untyped.code).not.toBe(0);
  }, 60_000);
});
