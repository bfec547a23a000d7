import { type MigrationMeta, readMigrationFiles } from "drizzle-orm/migrator";

/**
 * The generated migrations of one dialect (drizzle/<dialect>/), as drizzle's migrator reads them.
 * Import it as a Bun macro (`with { type: "macro" }`): it then runs when the importing module is
 * transpiled or bundled, and the migrations are inlined as data, so a compiled binary carries them
 * and nothing reads drizzle/ at run time.
 */
export function readMigrations(dialect: "pg" | "sqlite"): MigrationMeta[] {
  return readMigrationFiles({ migrationsFolder: new URL(`../../drizzle/${dialect}`, import.meta.url).pathname });
}
