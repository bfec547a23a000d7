import type { Sql } from "postgres";
import { FORKING, type ForkCopier, type ForkedTable, noneCopied } from "../drizzle/fork-tables.ts";

/**
 * PostgreSQL's fork: one REPEATABLE READ transaction of `INSERT … SELECT`s, one a table, so every table
 * is read from the snapshot its first statement took, and nothing of it is seen before it commits. The
 * source's rows are read, never locked: its writers go on meanwhile (docs/decisions/forks.md).
 */
export function postgresForkCopier(client: Sql): ForkCopier {
  return {
    async copy(source, target, tables) {
      return client.begin("isolation level repeatable read", async (sql) => {
        // Held to the commit: a later fork's cleaning skips a row being copied (abandoned's `skip locked`).
        await sql`select id from environments where id = ${target} for update`;
        const [row] = await sql`select active_version from environments where id = ${source}`;
        const copied = noneCopied();
        if (!row) return { sourceFound: false, activeVersion: null, copied };
        for (const table of tables) {
          const result = await sql.unsafe(insertSelect(table), [source, target]);
          if (table.counted) copied[table.counted] = result.count;
        }
        return { sourceFound: true, activeVersion: (row.active_version as string | null) ?? null, copied };
      });
    },

    async abandoned(before) {
      const rows = await client`select id from environments
        where changed = ${FORKING} and updated_at < ${before} for update skip locked`;
      return rows.map((row) => Number(row.id));
    },
  };
}

/** `$1` the source, `$2` the fork. Column names come from the schema, never from a caller. */
function insertSelect({ table, columns, only }: ForkedTable): string {
  const values = columns.map((column) =>
    column === "environment"
      ? "$2::integer"
      : column === "blob_environment"
        ? "coalesce(blob_environment, $1)"
        : column,
  );
  return `insert into ${table} (${columns.join(", ")}) select ${values.join(", ")} from ${table}
    where environment = $1${only ? ` and ${only}` : ""}`;
}
