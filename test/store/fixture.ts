import { postgresDialect, sqliteDialect } from "../../src/data/sql-dialect.ts";
import type { ExecutionRow, RunRow, StepRow, Store, WriteStatement } from "../../src/store/types.ts";
import { row } from "../support/rows.ts";

/**
 * What a contract suite runs on: a store on a fresh database, and a peer for what another instance on the
 * same database does. Where one process serves the database (SQLite) the peer is the store itself.
 */
export interface ContractStores {
  store: Store;
  peer: Store;
  close(): Promise<void>;
}

export type OpenStores = () => Promise<ContractStores>;

/** The fake clock: every time a test passes in is an offset from here. */
export const T0 = 1_800_000_000_000;
export const at = (offset: number) => T0 + offset;

/** The rows a workflow invocation admits (as engine/workflows/new-run.ts builds them), queued at `now` unless leased. */
export function runRows(
  options: { now?: number; requestId?: string; principalId?: string; lease?: { owner: string; until: number } } = {},
): { execution: ExecutionRow; run: RunRow } {
  const { now = T0, requestId = crypto.randomUUID(), principalId = "alice", lease } = options;
  const id = Bun.randomUUIDv7();
  const status = lease ? "running" : "queued";
  const input = { order: id.slice(-4), lines: [1, 2] };
  return {
    execution: row({
      id,
      requestId,
      principalId,
      action: "orders.fulfil",
      kind: "workflow",
      input,
      status,
      createdAt: now,
      startedAt: lease ? now : null,
    }),
    run: {
      id,
      requestId,
      workflow: "orders.fulfil",
      releaseVersion: "t1",
      principalKind: "user",
      principalId,
      input,
      status,
      output: null,
      errorCode: null,
      errorMessage: null,
      cancelRequested: false,
      leaseOwner: lease?.owner ?? null,
      leaseExpiresAt: lease?.until ?? null,
      wakeAt: now,
      createdAt: now,
      updatedAt: now,
      finishedAt: null,
    },
  };
}

export function stepRow(runId: string, overrides: Partial<StepRow> = {}): StepRow {
  return {
    runId,
    name: "charge",
    seq: 0,
    kind: "step",
    status: "succeeded",
    attempts: 1,
    output: { charged: 42 },
    error: null,
    startedAt: at(1),
    finishedAt: at(2),
    ...overrides,
  };
}

/**
 * Data writes in the store's own SQL (as src/data/writes.ts hands them over), on the attribute table:
 * one that inserts a label, and one that must change a row that is not there.
 */
export function dataWrites(store: Store) {
  const dialect = store.dialect === "sqlite" ? sqliteDialect : postgresDialect;
  return {
    insertLabel(label: string): WriteStatement {
      const params: unknown[] = [];
      const values = [crypto.randomUUID(), "contract", label, T0].map((v) => dialect.param(params, v));
      return { sql: `insert into data_attrs (id, entity, label, created_at) values (${values.join(", ")})`, params };
    },
    renameMissing(): WriteStatement {
      const params: unknown[] = [];
      const label = dialect.param(params, "renamed");
      const id = dialect.param(params, crypto.randomUUID());
      return { sql: `update data_attrs set label = ${label} where id = ${id}`, params, mustChange: "the row is gone" };
    },
    async labels(): Promise<string[]> {
      const rows = await store.dataSelect(`select label from data_attrs where entity = 'contract' order by label`, []);
      return rows.map((r) => r.label as string);
    },
  };
}
