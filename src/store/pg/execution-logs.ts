import type { Sql } from "postgres";
import type { LoggedUpTo } from "../executions.ts";
import type { LogRow } from "../rows.ts";
import { Lane, type WriteLoad } from "./lane.ts";
import { ENTRIES_PER_NOTIFY, LOGS_CHANNEL, type LogFollows } from "./log-follows.ts";

/**
 * Lines travel as one JSON text, like executions (see pg/executions.ts); `$N` is that parameter. Inserted
 * in key order: two instances writing lines of the same runs (one of them took the runs over) wait on
 * each other's keys, and in one order they cannot wait in a circle.
 */
export const insertLogLines = (
  param: string,
) => `insert into execution_logs (environment, execution_id, seq, at, level, step, line)
  select * from jsonb_to_recordset(${param}::text::jsonb)
    as l(environment integer, "executionId" text, seq integer, at bigint, level text, step text, line text)
  order by l."executionId", l.seq
  on conflict do nothing`;

const INSERT = insertLogLines("$1");

/**
 * Lines of executions still running, and word of them to their followers (on any instance), taken when
 * someone follows one of them (LogFollows): one NOTIFY per statement, not per line, naming each execution
 * with the highest seq just stored, 150 a message (a payload stays under 8000 bytes). A follower reads
 * the lines it lacks; their text never travels in it. Lines stored with a settlement need none: the
 * status change notifies (drizzle/pg/0007).
 */
export const APPEND_LINES = `with logged as (${insertLogLines("$1")} returning execution_id, seq)
  select pg_notify('${LOGS_CHANNEL}', string_agg(entry, ','))
  from (select execution_id || ':' || max(seq) as entry, (row_number() over ()) / ${ENTRIES_PER_NOTIFY} as chunk
    from logged group by execution_id) as upto
  group by chunk`;

/** A LOGS_CHANNEL payload: which executions have lines stored up to which seq. */
export function parseLogged(payload: string): LoggedUpTo[] {
  return payload.split(",").map((entry) => {
    const colon = entry.lastIndexOf(":");
    return { executionId: entry.slice(0, colon), seq: Number(entry.slice(colon + 1)) };
  });
}

interface PendingLines {
  json: string;
  /** The highest seq of the item's lines, per execution. */
  upTo: Map<string, number>;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/** A JSON array text of lines of `environment`, for the statements above. */
export const logLinesJson = (environment: number, lines: LogRow[]) =>
  JSON.stringify(lines.map((line) => ({ environment, ...line })));

/**
 * The lines of executions still running, of every environment (each line carries its own): those queued
 * in one turn go out as one INSERT (one commit), one batch in flight at a time, with word of them
 * (APPEND_LINES) when someone follows one of them. A settling execution's last lines go with its
 * settlement instead.
 */
export class PgLogWriter {
  private readonly lane = new Lane<PendingLines>((batch) => this.write(batch), {
    maxItems: 500,
    maxWeight: 4 * 1024 * 1024,
    weigh: (item) => item.json.length,
  });

  constructor(
    private readonly client: Sql,
    private readonly follows: LogFollows,
  ) {}

  get load(): WriteLoad {
    return this.lane.load;
  }

  append(environment: number, lines: LogRow[]): Promise<void> {
    if (lines.length === 0) return Promise.resolve();
    // Each item is an array's contents, so a batch joins them into one array.
    const json = logLinesJson(environment, lines).slice(1, -1);
    const upTo = new Map<string, number>();
    for (const { executionId, seq } of lines) upTo.set(executionId, Math.max(seq, upTo.get(executionId) ?? -1));
    for (const [executionId, seq] of upTo) this.follows.appended(executionId, seq);
    return new Promise((resolve, reject) => this.lane.push({ json, upTo, resolve, reject }));
  }

  drain(): Promise<void> {
    return this.lane.drain();
  }

  private async write(batch: PendingLines[]): Promise<void> {
    try {
      const followed = batch.some((item) => [...item.upTo.keys()].some((id) => this.follows.followed(id)));
      const lines = `[${batch.map((item) => item.json).join(",")}]`;
      await this.client.unsafe(followed ? APPEND_LINES : INSERT, [lines], { prepare: true });
      // A follower announced while the batch was on its way: word of it now.
      if (!followed) this.follows.stored(batch.map((item) => item.upTo));
    } catch (error) {
      for (const item of batch) item.reject(error);
      return;
    }
    for (const item of batch) item.resolve();
  }
}
