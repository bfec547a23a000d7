import type { Database, SQLQueryBindings } from "bun:sqlite";
import type { DataWrite } from "../data.ts";
import { writeStatements } from "../data-write-sql.ts";
import { WriteFailed } from "../write-failure.ts";
import { sqliteDialect } from "./dialect.ts";
import { StatementCache } from "./statement-cache.ts";

/** Runs an execution's (or a step's) data writes inside the caller's transaction; throws on the first refused one. */
export class SqliteDataWriter {
  private readonly statements: StatementCache;

  constructor(client: Database) {
    this.statements = new StatementCache(client);
  }

  apply(environment: number, writes: readonly DataWrite[]): void {
    for (const write of writeStatements(sqliteDialect, environment, writes)) {
      const { changes } = this.statements.get(write.sql).run(...(write.params as SQLQueryBindings[]));
      if (write.mustChange && changes === 0) throw new WriteFailed(write.mustChange);
    }
  }
}
