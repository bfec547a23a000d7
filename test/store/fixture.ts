import { afterEach, beforeEach } from "bun:test";
import { postgresDialect, sqliteDialect } from "../../src/data/sql-dialect.ts";
import { newRun } from "../../src/engine/workflows/new-run.ts";
import type { WriteStatement } from "../../src/store/executions.ts";
import type { ExecutionRow, RunRow, StepRow } from "../../src/store/rows.ts";
import type { Store } from "../../src/store/store.ts";

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

/** Opens fresh stores before each test of the suite (handed to `use`) and closes them after it. */
export function storesPerTest(open: OpenStores, use: (stores: ContractStores) => void) {
  let stores: ContractStores | undefined;
  beforeEach(async () => {
    stores = await open();
    use(stores);
  });
  afterEach(() => stores?.close());
}

/** The fake clock: every time a test passes in is an offset from here. */
export const T0 = 1_800_000_000_000;
export const at = (offset: number) => T0 + offset;

/** The rows a workflow invocation admits (made as the engine makes them), queued at `now` unless leased. */
export function runRows(
  options: {
    now?: number;
    requestId?: string;
    principalId?: string;
    lease?: { owner: string; until: number };
    input?: unknown;
    claims?: Record<string, unknown>;
  } = {},
): { execution: ExecutionRow; run: RunRow } {
  const { now = T0, requestId = crypto.randomUUID(), principalId = "alice", lease = null } = options;
  return newRun({
    principal: { kind: "user", id: principalId, ...(options.claims ? { claims: options.claims } : {}) },
    requestId,
    input: options.input ?? { order: crypto.randomUUID(), lines: [1, 2] },
    contract: { name: "orders.fulfil", contractHash: "c".repeat(64) },
    releaseVersion: "t1",
    fingerprint: "f".repeat(64),
    lease,
    now,
  });
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
