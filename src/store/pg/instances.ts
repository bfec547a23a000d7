import type { Sql } from "postgres";
import { INTERRUPTED } from "../executions.ts";
import { type InstanceStore, newInstanceId } from "../instances.ts";

/** Several processes may share a PostgreSQL database: each renews its row, and fails what dead ones left running. */
export class PgInstanceStore implements InstanceStore {
  readonly id = newInstanceId();

  constructor(private readonly client: Sql) {}

  /** Run leases expire by themselves; a dead instance's executions fail at the next keepAlive. */
  async recover(_now: number): Promise<number> {
    return 0;
  }

  async keepAlive(now: number, expiresAt: number): Promise<number> {
    const sql = this.client;
    await sql`insert into instances (id, started_at, expires_at) values (${this.id}, ${now}, ${expiresAt})
      on conflict (id) do update set expires_at = excluded.expires_at`;
    const failed = await sql`update executions e
      set status = 'failed', error_code = 'execution_interrupted', error_message = ${INTERRUPTED}, finished_at = ${now}
      where e.status = 'running' and e.kind = 'function' and e.instance is not null and e.instance <> ${this.id}
        and not exists (select 1 from instances i where i.id = e.instance and i.expires_at >= ${now})`;
    await sql`delete from instances where expires_at < ${now}`;
    return failed.count;
  }

  async retire(): Promise<void> {
    await this.client`delete from instances where id = ${this.id}`;
  }
}
