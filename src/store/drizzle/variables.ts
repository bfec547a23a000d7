import { and, eq, getTableColumns, isNull, ne, or, sql } from "drizzle-orm";
import type { Resealed, SealedVariable, VariableRow, VariableStore, VariableWriter } from "../variables.ts";
import type { SharedDatabase, SharedTables } from "./database.ts";

type Tables = Pick<SharedTables, "variables" | "environments">;

/**
 * What a change of variables sets on its environment's row: the revision every instance polls (as an
 * activation does, without touching the active version or its time) and the next number of the
 * service-wide sequence of changes (hosting mode's poll of `changedSince`).
 */
export const revisionBump = (t: Pick<SharedTables, "environments">) => ({
  revision: sql`${t.environments.revision} + 1`,
  changed: sql`(select coalesce(max(changed), 0) + 1 from environments)`,
});

/** A variable's columns but its environment (the store's own, bound). */
export function variableColumns(t: Pick<SharedTables, "variables">) {
  const { environment: _, ...columns } = getTableColumns(t.variables);
  return columns;
}

/** The variables of one environment: reads here, the transactional writes through the dialect's writer. */
export class DrizzleVariableStore implements VariableStore {
  constructor(
    private readonly db: SharedDatabase,
    private readonly t: Tables,
    private readonly environment: number,
    private readonly writer: VariableWriter,
  ) {}

  list(): Promise<VariableRow[]> {
    const v = this.t.variables;
    return this.db.select(variableColumns(this.t)).from(v).where(eq(v.environment, this.environment)).orderBy(v.name);
  }

  async get(name: string): Promise<VariableRow | null> {
    const v = this.t.variables;
    const rows = await this.db
      .select(variableColumns(this.t))
      .from(v)
      .where(and(eq(v.environment, this.environment), eq(v.name, name)));
    return rows[0] ?? null;
  }

  set(row: VariableRow): Promise<{ created: boolean }> {
    return this.writer.set(this.environment, row);
  }

  unset(name: string): Promise<boolean> {
    return this.writer.unset(this.environment, name);
  }

  sealedUnder(notKeyId: string, limit: number): Promise<SealedVariable[]> {
    const v = this.t.variables;
    return this.db
      .select({ environment: v.environment, name: v.name, value: v.value, keyId: v.keyId })
      .from(v)
      .where(and(eq(v.secret, true), or(isNull(v.keyId), ne(v.keyId, notKeyId))))
      .orderBy(v.environment, v.name)
      .limit(limit);
  }

  /** One compare-and-set per secret: no revision bump, the plaintext is unchanged. */
  async reseal(rows: Resealed[]): Promise<number> {
    const v = this.t.variables;
    let written = 0;
    for (const row of rows) {
      const done = await this.db
        .update(v)
        .set({ value: row.value, keyId: row.keyId })
        .where(and(eq(v.environment, row.environment), eq(v.name, row.name), eq(v.value, row.from)))
        .returning({ name: v.name });
      written += done.length;
    }
    return written;
  }
}
