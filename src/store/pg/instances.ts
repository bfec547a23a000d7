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
    // Skip locked, so these never wait: a row another transaction holds is being written by a live
    // instance (its settlement) or swept by another one, and the next keepAlive sees it again.
    const failed = await sql`update executions e
      set status = 'failed', error_code = 'execution_interrupted', error_message = ${INTERRUPTED}, finished_at = ${now}
      where e.id in (select x.id from executions x
        where x.status = 'running' and x.kind = 'function' and x.instance is not null and x.instance <> ${this.id}
          and not exists (select 1 from instances i where i.id = x.instance and i.expires_at >= ${now})
        for update of x skip locked)`;
    await sql`delete from instances where id in (
      select id from instances where expires_at < ${now} for update skip locked)`;
    return failed.count;
  }

  async retire(): Promise<void> {
    await this.client`delete from instances where id = ${this.id}`;
  }
}
