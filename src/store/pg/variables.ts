import { and, eq } from "drizzle-orm";
import type { PostgresJsDatabase } from "drizzle-orm/postgres-js";
import { revisionBump } from "../drizzle/variables.ts";
import type * as schema from "../schema/pg.ts";
import type { VariableRow, VariableWriter } from "../variables.ts";

/** PostgreSQL's writes of variables: the row and its environment's revision in one transaction. */
export function pgVariableWriter(db: PostgresJsDatabase<typeof schema>, t: typeof schema): VariableWriter {
  const v = t.variables;
  const e = t.environments;
  const bump = revisionBump(t);
  return {
    set(environment: number, row: VariableRow) {
      return db.transaction(async (tx) => {
        // The environment's row first, locked: writers of one environment's variables take turns.
        await tx.update(e).set(bump).where(eq(e.id, environment));
        const before = await tx
          .select({ name: v.name })
          .from(v)
          .where(and(eq(v.environment, environment), eq(v.name, row.name)));
        await tx
          .insert(v)
          .values({ ...row, environment })
          .onConflictDoUpdate({ target: [v.environment, v.name], set: { ...row } });
        return { created: before.length === 0 };
      });
    },
    unset(environment: number, name: string) {
      return db.transaction(async (tx) => {
        const gone = await tx
          .delete(v)
          .where(and(eq(v.environment, environment), eq(v.name, name)))
          .returning({ name: v.name });
        if (gone.length > 0) await tx.update(e).set(bump).where(eq(e.id, environment));
        return gone.length > 0;
      });
    },
  };
}
