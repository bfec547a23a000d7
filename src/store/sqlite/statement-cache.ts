import type { Database, Statement } from "bun:sqlite";

const SIZE = 500;

/**
 * Prepared statements by SQL text. The data layer repeats the same compiled SQL; preparing costs more
 * than running it, and bun:sqlite's own `query()` cache costs about as much. Least recently used first out.
 */
export class StatementCache {
  private readonly statements = new Map<string, Statement>();

  constructor(private readonly client: Database) {}

  get(sql: string): Statement {
    let statement = this.statements.get(sql);
    if (statement) this.statements.delete(sql);
    else statement = this.client.prepare(sql);
    this.statements.set(sql, statement);
    if (this.statements.size > SIZE) {
      const oldest = this.statements.keys().next().value as string;
      this.statements.get(oldest)?.finalize();
      this.statements.delete(oldest);
    }
    return statement;
  }
}
