import { and, eq } from "drizzle-orm";
import type { BunSQLiteDatabase } from "drizzle-orm/bun-sqlite";
import { revisionBump } from "../drizzle/variables.ts";
import type * as schema from "../schema/sqlite.ts";
import type { VariableRow, VariableWriter } from "../variables.ts";

type Tables = Pick<typeof schema, "variables" | "environments">;

/**
 * SQLite's writes of variables: the row and its environment's revision in one synchronous transaction
 * (an async one would commit at its first await), taken immediately so it never upgrades a read lock.
 */
export function sqliteVariableWriter(db: BunSQLiteDatabase<typeof schema>, t: Tables): VariableWriter {
  const v = t.variables;
  const e = t.environments;
  // drizzle/'s revisionBump is typed against pg-core's columns; the SQL it writes is the same.
  const bump = revisionBump(t as never);
  return {
    async set(environment: number, row: VariableRow) {
      return db.transaction(
        (tx) => {
          const before = tx
            .select({ name: v.name })
            .from(v)
            .where(and(eq(v.environment, environment), eq(v.name, row.name)))
            .all();
          tx.insert(v)
            .values({ ...row, environment })
            .onConflictDoUpdate({ target: [v.environment, v.name], set: { ...row } })
            .run();
          tx.update(e).set(bump).where(eq(e.id, environment)).run();
          return { created: before.length === 0 };
        },
        { behavior: "immediate" },
      );
    },
    async unset(environment: number, name: string) {
      return db.transaction(
        (tx) => {
          const gone = tx
            .delete(v)
            .where(and(eq(v.environment, environment), eq(v.name, name)))
            .returning({ name: v.name })
            .all();
          if (gone.length > 0) tx.update(e).set(bump).where(eq(e.id, environment)).run();
          return gone.length > 0;
        },
        { behavior: "immediate" },
      );
    },
  };
}
