import type { Sql } from "postgres";
import { INTERRUPTED } from "../executions.ts";
import { type InstanceRecord, type InstanceStore, newInstanceId, SERVER_VERSION } from "../instances.ts";

/** Several processes may share a PostgreSQL database: each renews its row, and fails what dead ones left running. */
export class PgInstanceStore implements InstanceStore {
  readonly id = newInstanceId();

  constructor(private readonly client: Sql) {}

  /** Run leases expire by themselves; a dead instance's executions fail at the next keepAlive. */
  async recover(_now: number): Promise<number> {
    return 0;
  }

  async keepAlive(now: number, expiresAt: number): Promise<string[]> {
    const sql = this.client;
    await sql`insert into instances (id, started_at, expires_at, beat_at, version)
      values (${this.id}, ${now}, ${expiresAt}, ${now}, ${SERVER_VERSION})
      on conflict (id) do update set expires_at = excluded.expires_at, beat_at = excluded.beat_at`;
    // Skip locked, so these never wait: a row another transaction holds is being written by a live
    // instance (its settlement) or swept by another one, and the next keepAlive sees it again.
    const failed = await sql<{ id: string }[]>`update executions e
      set status = 'failed', error_code = 'execution_interrupted', error_message = ${INTERRUPTED}, finished_at = ${now}
      where e.id in (select x.id from executions x
        where x.status = 'running' and x.kind = 'function' and x.instance is not null and x.instance <> ${this.id}
          and not exists (select 1 from instances i where i.id = x.instance and i.expires_at >= ${now})
        for update of x skip locked)
      returning e.id`;
    await sql`delete from instances where id in (
      select id from instances where expires_at < ${now} for update skip locked)`;
    return failed.map((row) => row.id);
  }

  async live(now: number): Promise<InstanceRecord[]> {
    const rows = await this.client<InstanceRecord[]>`select id, started_at as "startedAt", beat_at as "beatAt",
        expires_at as "expiresAt", version
      from instances where expires_at >= ${now} order by started_at, id`;
    // bigint columns arrive as strings.
    return rows.map((row) => ({
      ...row,
      startedAt: Number(row.startedAt),
      beatAt: row.beatAt === null ? null : Number(row.beatAt),
      expiresAt: Number(row.expiresAt),
    }));
  }

  async retire(): Promise<void> {
    await this.client`delete from instances where id = ${this.id}`;
  }
}
