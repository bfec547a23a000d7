import { afterEach, beforeEach } from "bun:test";
import { newRun } from "../../src/engine/workflows/new-run.ts";
import type { DataWrite, ReadBudget } from "../../src/store/data.ts";
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

/** A read budget no test reaches (a query's is QUERY_MAX_ROWS and QUERY_MAX_BYTES). */
export const unbounded = (): ReadBudget => ({ rows: Number.MAX_SAFE_INTEGER, bytes: Number.MAX_SAFE_INTEGER });

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
 * Data writes as src/data/writes.ts hands them over, on an entity of labels: one that inserts a label
 * (its id is the label, so inserting one twice breaks the primary key), and one that must change a row
 * that is not there (refused with `gone`).
 */
export function dataWrites(store: Store) {
  return {
    insertLabel(label: string): DataWrite {
      return { op: "insert", entity: "contract", id: `label-${label}`, doc: { label }, at: T0 };
    },
    renameMissing(): DataWrite {
      return { op: "replace", entity: "contract", id: "missing", doc: { label: "renamed" }, at: T0 };
    },
    gone: "no contract with id missing (deleted meanwhile)",
    async labels(): Promise<string[]> {
      const rows = await store.data.selectRoots({ entity: "contract", where: null, children: [] }, unbounded());
      return rows.map((r) => r.doc.label as string).sort();
    },
  };
}
