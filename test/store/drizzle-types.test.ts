import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { repoRoot, runCommand } from "../support/cli.ts";

const dir = mkdtempSync(join(tmpdir(), "actuate-drizzle-sqlite-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * src/store/drizzle/ is written once for both databases, and the repository's compilation types it with
 * pg-core's builders (drizzle/database.ts). This compiles it again with SQLite's database and schema, so
 * a builder call SQLite does not have (PostgreSQL's `.for()`, a prepared statement's name) fails here
 * instead of compiling against a database that lacks it.
 */
test("the drizzle code shared by both dialects compiles against SQLite's builders too", async () => {
  const database = join(repoRoot, "src/store/drizzle/database.ts");
  const schema = join(repoRoot, "src/store/schema/sqlite.ts");
  symlinkSync(join(repoRoot, "node_modules"), join(dir, "node_modules"));
  writeFileSync(
    join(dir, "sqlite-builders.ts"),
    `import type { BunSQLiteDatabase } from "drizzle-orm/bun-sqlite";
import type * as tables from ${JSON.stringify(schema)};
declare module ${JSON.stringify(database)} {
  interface BuildersUnderCheck {
    database: BunSQLiteDatabase<typeof tables>;
    tables: typeof tables;
  }
}
`,
  );
  writeFileSync(
    join(dir, "tsconfig.json"),
    JSON.stringify({
      extends: join(repoRoot, "tsconfig.json"),
      include: [join(repoRoot, "src/store/drizzle/*.ts"), "sqlite-builders.ts"],
    }),
  );
  const tsc = await runCommand(["bun", join(repoRoot, "node_modules/typescript/bin/tsc"), "-p", dir], dir);
  expect(tsc.stdout + tsc.stderr).toBe("");
  expect(tsc.code).toBe(0);
}, 60_000);
