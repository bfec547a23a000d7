import type { Database, SQLQueryBindings } from "bun:sqlite";
import type { WriteStatement } from "../executions.ts";
import { WriteFailed } from "../write-failure.ts";
import { StatementCache } from "./statement-cache.ts";

/** Runs an execution's (or a step's) data writes inside the caller's transaction; throws on the first refused one. */
export class SqliteDataWriter {
  private readonly statements: StatementCache;

  constructor(client: Database) {
    this.statements = new StatementCache(client);
  }

  apply(writes: readonly WriteStatement[]): void {
    for (const write of writes) {
      const { changes } = this.statements.get(write.sql).run(...(write.params as SQLQueryBindings[]));
      if (write.mustChange && changes === 0) throw new WriteFailed(write.mustChange);
    }
  }
}
