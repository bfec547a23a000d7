import type { ParameterOrJSON, TransactionSql } from "postgres";
import type { DataWrite } from "../data.ts";
import { writeStatements } from "../data-write-sql.ts";
import { WriteFailed } from "../write-failure.ts";
import { postgresDialect } from "./dialect.ts";

/** Runs an execution's (or a step's) data writes inside the transaction `tx`; throws on the first refused one. */
export async function applyDataWrites(
  tx: TransactionSql,
  environment: number,
  writes: readonly DataWrite[],
): Promise<void> {
  for (const write of writeStatements(postgresDialect, environment, writes)) {
    const result = await tx.unsafe(write.sql, write.params as ParameterOrJSON<never>[]);
    if (write.mustChange && result.count === 0) throw new WriteFailed(write.mustChange);
  }
}
