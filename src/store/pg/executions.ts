import type { ParameterOrJSON, Sql } from "postgres";
import { selectList } from "../drizzle/columns.ts";
import type { SharedDatabase, SharedTables } from "../drizzle/database.ts";
import { listExecutions } from "../drizzle/lists.ts";
import type { ExecutionChanges, ExecutionFilter, ExecutionSettlement, ExecutionStore } from "../executions.ts";
import { type ExecutionRow, STORED_SIZES } from "../rows.ts";
import { executions } from "../schema/pg.ts";
import type { PrincipalKind } from "../statuses.ts";
import { failedWrites, writeFailure } from "../write-failure.ts";
import type { BatchRetries } from "./batch-retries.ts";
import { applyDataWrites } from "./data-writes.ts";
import { insertLogLines, logLinesJson, parseLogged } from "./execution-logs.ts";
import { Lane, totalLoad, type WriteLoad } from "./lane.ts";
import { CREATED_CHANNEL, LIST_WATCHERS_CHANNEL, type ListWatchers } from "./list-watchers.ts";
import { byText, requestKey } from "./lock-order.ts";
import { FOLLOWS_CHANNEL, LOGS_CHANNEL, type LogFollows } from "./log-follows.ts";

export interface Claim {
  row: ExecutionRow;
  created: boolean;
}

interface Pending {
  /** The item's row in the statement's JSON parameter, serialized once when queued. */
  json: string;
  reject: (error: unknown) => void;
}

interface PendingClaim extends Pending {
  environment: number;
  row: ExecutionRow;
  resolve: (claim: Claim) => void;
}

interface PendingSettle extends Pending {
  id: string;
  /** The execution's last log lines, as the contents of a JSON array ("" when none). */
  logs: string;
  resolve: () => void;
}

/** The claims of one (principal, requestId) in a batch: the first is inserted, the others get its outcome. */
interface ClaimGroup {
  claims: [PendingClaim, ...PendingClaim[]];
  done: boolean;
}

type RawRow = Omit<ExecutionRow, "createdAt" | "startedAt" | "finishedAt"> & {
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
};

/** A statement's rows travel as one JSON text; jsonb_to_recordset matches its keys to these (quoted) names. */
const ROW_TYPE = `environment integer, id text, "requestId" text, "principalKind" text, "principalId" text, action text, kind text,
  "releaseVersion" text, "contractHash" text, "inputFingerprint" text, input jsonb, status text, output jsonb,
  "errorCode" text, "errorMessage" text, "createdAt" bigint, "startedAt" bigint, "finishedAt" bigint,
  "scheduledBy" text, "inputBytes" integer, "outputBytes" integer`;

// `$1::text::jsonb`, not `$1::jsonb`: a parameter typed jsonb goes through postgres-js's JSON serializer
// (and drizzle swaps that one for a no-op), so a text parameter is the one that arrives as written.
// $2: this server process, so another can fail its running executions if it dies (see PgInstanceStore.keepAlive).
export const INSERT_CLAIMS = `insert into executions (environment, id, request_id, principal_kind, principal_id, action, kind, release_version,
    contract_hash, input_fingerprint, input, status, output, error_code, error_message, created_at, started_at,
    finished_at, scheduled_by, input_bytes, output_bytes, instance)
  select r.*, $2::text from jsonb_to_recordset($1::text::jsonb) as r(${ROW_TYPE})
  on conflict (environment, principal_kind, principal_id, request_id) do nothing
  returning id`;

const COLUMNS = selectList(executions, "e", ["environment", ...STORED_SIZES]);

const BY_ID = `select ${COLUMNS} from executions e where e.id = $1 and e.environment = $2`;

const BY_IDS = `select ${COLUMNS} from executions e where e.id = any($1::text[]) and e.environment = $2`;

const BY_REQUEST = `select ${COLUMNS} from executions e
  where e.environment = $1 and e.principal_kind = $2 and e.principal_id = $3 and e.request_id = $4`;

// A text parameter's length is at hand (octet_length reads it from the value's header): the output's size
// is measured from the text sent, not from the jsonb, which has no size short of printing it again.
const SETTLE_ONE = `update executions set status = $1, output = $2::text::jsonb, output_bytes = octet_length($2::text),
    error_code = $3, error_message = $4, finished_at = $5
  where id = $6 and environment = $7`;

/** Notified by a trigger on `executions` (drizzle/pg/0007_execution_changes.sql): ids, comma-separated. */
const CHANGES_CHANNEL = "actuate_execution_changes";

const BY_KEYS = `select ${COLUMNS}, e.environment
  from jsonb_to_recordset($1::text::jsonb)
    as k(environment integer, "principalKind" text, "principalId" text, "requestId" text)
  join executions e on e.environment = k.environment
    and e.principal_kind = k."principalKind" and e.principal_id = k."principalId" and e.request_id = k."requestId"`;

// The ids again as an array the planner can see: it takes any set-returning function for 100 rows and
// would rather hash-join against a scan of the whole table until that holds some ten thousand rows.
const UPDATE = `update executions e set status = s.status, output = s.output, output_bytes = s."outputBytes",
    error_code = s."errorCode", error_message = s."errorMessage", finished_at = s."finishedAt"
  from jsonb_to_recordset($1::text::jsonb) as s(environment integer, id text, status text, output jsonb,
    "outputBytes" integer, "errorCode" text, "errorMessage" text, "finishedAt" bigint)
  where e.id = any(string_to_array($2::text, ',')) and e.id = s.id and e.environment = s.environment
  returning e.id`;

// The settling executions' last log lines are inserted by the same statement ($3), so they commit
// with the status and cost no round trip of their own. A batch without lines takes the plain UPDATE:
// the empty insert cost a batch of 32 settlements 6-8 % of its time (BENCHMARKS.md, ninth session).
const UPDATE_WITH_LOGS = `with logged as (${insertLogLines("$3")}) ${UPDATE}`;

/**
 * Named statements: parsed once per connection, and no Describe round trip per call (postgres-js sends
 * one before every unnamed statement with parameters). open.ts sets plan_cache_mode = force_custom_plan
 * so each call is still planned for its batch: a generic plan cached while the table was small keeps
 * scanning all of it until autovacuum next analyzes the table (measured: settles slowed with every row).
 */
const PREPARED = { prepare: true };

/** Per statement; a longer queue goes out in several statements, one after the other. */
const byJson = { maxItems: 500, maxWeight: 4 * 1024 * 1024, weigh: (item: Pending) => item.json.length };

/**
 * Executions on PostgreSQL, with group commit for the writes every invocation makes, one per process for
 * every environment (each write carries its own; `PgExecutionStore` is an environment's view): the claims queued during one turn
 * of the event loop are one INSERT … ON CONFLICT DO NOTHING, the settlements one UPDATE … FROM, each its
 * own commit. Unlike the SQLite writer, the database decides every claim (through the unique index
 * executions_request_uq) and a claim resolves only once committed, because several instances may
 * share the database and the handler must not run before its claim is durable.
 */
export class PgExecutionWriter {
  private readonly claims = new Lane<PendingClaim>((batch) => this.writeClaims(batch), byJson);
  private readonly settles = new Lane<PendingSettle>((batch) => this.writeSettles(batch), byJson);
  private readonly changeListeners = new Set<ExecutionChanges>();
  private listening: Promise<void> | null = null;

  constructor(
    private readonly client: Sql,
    private readonly instance: string,
    private readonly retries: BatchRetries,
    private readonly follows: LogFollows,
    private readonly watchers: ListWatchers,
  ) {}

  /** Inserts the row unless its (principal, requestId) is taken; resolves, once committed, to the holder. */
  claim(environment: number, row: ExecutionRow): Promise<Claim> {
    return new Promise((resolve, reject) =>
      this.claims.push({ environment, row, json: claimJson(environment, row), resolve, reject }),
    );
  }

  /**
   * Resolves once the final status is committed; rejects when no execution has this id. Data writes
   * commit with the status in a transaction of their own; only plain settlements are batched.
   */
  async settle(environment: number, id: string, settlement: ExecutionSettlement): Promise<ExecutionSettlement> {
    if (settlement.writes?.length) return this.settleWithWrites(environment, id, settlement);
    const { logs: lines = [] } = settlement;
    const json = settlementJson(environment, id, settlement);
    const logs = lines.length === 0 ? "" : logLinesJson(environment, lines).slice(1, -1);
    await new Promise<void>((resolve, reject) => this.settles.push({ id, json, logs, resolve, reject }));
    this.follows.ended(id);
    const { logs: _, ...stored } = settlement;
    return stored;
  }

  /** One execution by id, on a named statement (waiting for results reads it often; a query builder costs more). */
  async get(environment: number, id: string): Promise<ExecutionRow | null> {
    const [raw] = await this.client.unsafe<RawRow[]>(BY_ID, [id, environment], PREPARED);
    return raw ? parseRow(raw) : null;
  }

  async getMany(environment: number, ids: string[]): Promise<ExecutionRow[]> {
    if (ids.length === 0) return [];
    const raws = await this.client.unsafe<RawRow[]>(BY_IDS, [ids, environment] as never[], PREPARED);
    return raws.map(parseRow);
  }

  async findByRequest(environment: number, principal: { kind: PrincipalKind; id: string }, requestId: string) {
    const params = [environment, principal.kind, principal.id, requestId];
    const [raw] = await this.client.unsafe<RawRow[]>(BY_REQUEST, params, PREPARED);
    return raw ? parseRow(raw) : null;
  }

  /**
   * Every environment's engine hears the changes (ids are unique across environments): the channels are
   * listened to once and each notification split once, whatever the number of environments composed.
   */
  listen(changes: ExecutionChanges): Promise<void> {
    this.changeListeners.add(changes);
    this.listening ??= Promise.all([
      this.client.listen(CHANGES_CHANNEL, (payload) => {
        const ids = payload.split(",");
        for (const each of this.changeListeners) each.stored(ids);
      }),
      this.client.listen(LOGS_CHANNEL, (payload) => {
        const lines = parseLogged(payload);
        for (const each of this.changeListeners) each.logged(lines);
      }),
      this.client.listen(FOLLOWS_CHANNEL, (payload) => this.follows.heard(payload)),
      this.client.listen(LIST_WATCHERS_CHANNEL, (payload) => this.watchers.heard(payload)),
      this.client.listen(CREATED_CHANNEL, (payload) => {
        const ids = this.watchers.createdBy(payload);
        if (ids.length > 0) for (const each of this.changeListeners) each.madeElsewhere(ids);
      }),
    ]).then(
      () => undefined,
      (error) => {
        this.listening = null;
        throw error;
      },
    );
    return this.listening;
  }

  followLogs(id: string, following: boolean): Promise<void> {
    return this.follows.announce(id, following);
  }

  watchLists(watching: boolean): void {
    this.watchers.watching(watching);
  }

  /** The writes and the final status in one transaction; a refused write fails the execution instead. */
  private async settleWithWrites(
    environment: number,
    id: string,
    s: ExecutionSettlement,
  ): Promise<ExecutionSettlement> {
    const { writes = [], logs = [], ...settlement } = s;
    // No output is SQL null, as the batched UPDATE stores it, not a jsonb `null` (sized 4).
    const output = s.output === null || s.output === undefined ? null : JSON.stringify(s.output);
    try {
      await this.client.begin(async (tx) => {
        await applyDataWrites(tx, environment, writes);
        const settled = [s.status, output, s.errorCode, s.errorMessage, s.finishedAt, id, environment];
        const params = settled as ParameterOrJSON<never>[];
        const updated = await tx.unsafe(SETTLE_ONE, params, PREPARED);
        if (updated.count === 0) throw new Error(`execution ${id} is not stored`);
        if (logs.length > 0) await tx.unsafe(insertLogLines("$1"), [logLinesJson(environment, logs)], PREPARED);
      });
      this.follows.ended(id);
      return settlement;
    } catch (error) {
      const reason = writeFailure(error);
      if (reason === null) throw error;
      return this.settle(environment, id, { ...failedWrites(settlement, reason), logs });
    }
  }

  get load(): WriteLoad {
    return totalLoad([this.claims.load, this.settles.load]);
  }

  /** Waits until every queued and in-flight write has ended (the store calls this before closing). */
  async drain(): Promise<void> {
    await Promise.all([this.claims.drain(), this.settles.drain()]);
  }

  private async writeClaims(batch: PendingClaim[]): Promise<void> {
    const groups = groupByRequest(batch);
    try {
      await this.claimGroups(groups, false);
    } catch (error) {
      // One bad row fails the whole statement: claim each key alone so that only its own claims fail.
      this.retries.retried("execution_claims", error, groups.length);
      const left = groups.filter((group) => !group.done);
      await Promise.all(left.map((group) => this.claimGroups([group], true).catch((error) => failGroup(group, error))));
    }
  }

  /**
   * `retried`: an earlier statement may have committed these rows and lost its answer (a dropped
   * connection), so finding a row with our own id means the claim is ours, not a replay of someone else's.
   */
  private async claimGroups(groups: ClaimGroup[], retried: boolean): Promise<void> {
    const rows = jsonArray(groups.map((group) => group.claims[0]));
    const inserted = await this.client.unsafe<{ id: string }[]>(INSERT_CLAIMS, [rows, this.instance], PREPARED);
    const ids = new Set(inserted.map((r) => r.id));
    const conflicted = groups.filter((group) => !ids.has(group.claims[0].row.id));
    for (const group of groups) {
      if (!ids.has(group.claims[0].row.id)) continue;
      // Answered as stored: it names its instance, as reads of it do.
      group.claims[0].row.instance = this.instance;
      resolveCreated(group);
    }
    this.watchers.created(ids);
    if (conflicted.length > 0) await this.resolveConflicts(conflicted, retried);
  }

  /** Reads the rows that hold the keys whose insert did nothing (a separate statement sees their commit). */
  private async resolveConflicts(groups: ClaimGroup[], retried: boolean): Promise<void> {
    const keys = groups.map(({ claims: [{ environment, row }] }) => ({
      environment,
      principalKind: row.principalKind,
      principalId: row.principalId,
      requestId: row.requestId,
    }));
    const found = await this.client.unsafe<(RawRow & { environment: number })[]>(
      BY_KEYS,
      [JSON.stringify(keys)],
      PREPARED,
    );
    const byKey = new Map(found.map(({ environment, ...raw }) => [requestKey(environment, raw), parseRow(raw)]));
    for (const group of groups) {
      const { environment, row: first } = group.claims[0];
      const existing = byKey.get(requestKey(environment, first));
      if (!existing) {
        failGroup(group, new Error(`execution for request ${first.requestId} vanished after a conflicting insert`));
      } else if (retried && existing.id === first.id) {
        resolveCreated(group);
      } else {
        group.done = true;
        for (const claim of group.claims) claim.resolve({ row: { ...existing }, created: false });
      }
    }
  }

  private async writeSettles(batch: PendingSettle[]): Promise<void> {
    // UPDATE … FROM applies only one source row per target row, so a repeated id waits for the next statement.
    const unique = new Map<string, PendingSettle>();
    const repeats: PendingSettle[] = [];
    for (const settle of batch) {
      if (unique.has(settle.id)) repeats.push(settle);
      else unique.set(settle.id, settle);
    }
    const settles = [...unique.values()];
    try {
      await this.settleAll(settles);
    } catch (error) {
      this.retries.retried("execution_settlements", error, settles.length);
      await Promise.all(settles.map((settle) => this.settleAll([settle]).catch(settle.reject)));
    }
    if (repeats.length > 0) await this.writeSettles(repeats);
  }

  private async settleAll(settles: PendingSettle[]): Promise<void> {
    const ids = settles.map((settle) => settle.id).join(",");
    const logged = settles.filter((settle) => settle.logs !== "");
    const params = [jsonArray(settles), ids];
    if (logged.length > 0) params.push(`[${logged.map((settle) => settle.logs).join(",")}]`);
    const statement = logged.length > 0 ? UPDATE_WITH_LOGS : UPDATE;
    const updated = await this.client.unsafe<{ id: string }[]>(statement, params, PREPARED);
    const stored = new Set(updated.map((r) => r.id));
    for (const settle of settles) {
      if (stored.has(settle.id)) settle.resolve();
      else settle.reject(new Error(`execution ${settle.id} is not stored`));
    }
  }
}

const jsonArray = (items: Pending[]) => `[${items.map((item) => item.json).join(",")}]`;

/** A claim as a row of INSERT_CLAIMS's JSON parameter, its values' sizes beside them. */
function claimJson(environment: number, { input, output, ...fields }: ExecutionRow): string {
  const [inputText, inputBytes] = measured(input);
  const [outputText, outputBytes] = measured(output);
  const rest = JSON.stringify({ environment, ...fields, inputBytes, outputBytes }).slice(0, -1);
  return `${rest},"input":${inputText},"output":${outputText}}`;
}

/** A settlement as a row of UPDATE's JSON parameter, the output's size beside it. */
function settlementJson(
  environment: number,
  id: string,
  { status, output, errorCode, errorMessage, finishedAt }: ExecutionSettlement,
) {
  const [outputText, outputBytes] = measured(output);
  const fields = { environment, id, status, errorCode, errorMessage, finishedAt, outputBytes };
  const rest = JSON.stringify(fields).slice(0, -1);
  return `${rest},"output":${outputText}}`;
}

/** A value as JSON text and its size (null for none): serialized once and measured from that text. */
function measured(value: unknown): [text: string, bytes: number | null] {
  if (value === null || value === undefined) return ["null", null];
  const text = JSON.stringify(value);
  return [text, Buffer.byteLength(text)];
}

function groupByRequest(batch: PendingClaim[]): ClaimGroup[] {
  const groups = new Map<string, ClaimGroup>();
  for (const claim of batch) {
    const key = requestKey(claim.environment, claim.row);
    const group = groups.get(key);
    if (group) group.claims.push(claim);
    else groups.set(key, { claims: [claim], done: false });
  }
  // Two instances inserting overlapping keys in opposite orders would deadlock on each other's pending
  // index entries; the same order everywhere rules that out (lock-order.ts). The statement inserts the
  // rows in the order of its JSON array.
  return [...groups.entries()].sort(([a], [b]) => byText(a, b)).map(([, group]) => group);
}

function resolveCreated(group: ClaimGroup) {
  group.done = true;
  const [first, ...others] = group.claims;
  first.resolve({ row: first.row, created: true });
  for (const claim of others) claim.resolve({ row: { ...first.row }, created: false });
}

function failGroup(group: ClaimGroup, error: unknown) {
  group.done = true;
  for (const claim of group.claims) claim.reject(error);
}

/**
 * postgres-js returns bigint as text; drizzle's schema reads these columns as numbers. `instance` only
 * where one claimed it (a function execution), as rows the engine makes leave it out.
 */
function parseRow({ instance, ...raw }: RawRow): ExecutionRow {
  return {
    ...raw,
    ...(instance ? { instance } : {}),
    createdAt: Number(raw.createdAt),
    startedAt: raw.startedAt === null ? null : Number(raw.startedAt),
    finishedAt: raw.finishedAt === null ? null : Number(raw.finishedAt),
  };
}

const COMMITTED = Promise.resolve();

/**
 * An environment's executions: the process's writer, its environment bound to every call, so another
 * environment's ids and request keys are unknown here. Cheap to make (no statement, no connection).
 */
export class PgExecutionStore implements ExecutionStore {
  constructor(
    private readonly writer: PgExecutionWriter,
    private readonly environment: number,
    private readonly lists: { db: SharedDatabase; tables: SharedTables },
  ) {}

  claim(row: ExecutionRow): Promise<Claim> {
    return this.writer.claim(this.environment, row);
  }

  /** A claim here resolves once committed (the database decides it): `committed` has nothing left to wait for. */
  async claimToRun(row: ExecutionRow): Promise<Claim & { committed: Promise<void> }> {
    return { ...(await this.claim(row)), committed: COMMITTED };
  }

  get(id: string) {
    return this.writer.get(this.environment, id);
  }

  getMany(ids: string[]) {
    return this.writer.getMany(this.environment, ids);
  }

  findByRequest(principal: { kind: PrincipalKind; id: string }, requestId: string) {
    return this.writer.findByRequest(this.environment, principal, requestId);
  }

  list(filter: ExecutionFilter) {
    return listExecutions(this.lists.db, this.lists.tables.executions, this.environment, filter);
  }

  settle(id: string, settlement: ExecutionSettlement) {
    return this.writer.settle(this.environment, id, settlement);
  }

  followLogs(id: string, following: boolean) {
    return this.writer.followLogs(id, following);
  }

  watchLists(watching: boolean) {
    this.writer.watchLists(watching);
  }

  /** Of every environment's executions: a follower knows which it waits for. */
  listen(changes: ExecutionChanges) {
    return this.writer.listen(changes);
  }
}
