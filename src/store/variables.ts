import type { InferSelectModel } from "drizzle-orm";
import type * as pg from "./schema/pg.ts";

/** A variable of one environment as stored: a secret's `value` is its sealed form, never its plaintext. */
export type VariableRow = Omit<InferSelectModel<typeof pg.variables>, "environment">;

/** A secret as key rotation reads it, across every environment. */
export interface SealedVariable {
  environment: number;
  name: string;
  /** The sealed value, as stored. */
  value: string;
  keyId: string | null;
}

/** A secret sealed again under a new key: written only if it still holds `from` (a set meanwhile wins). */
export interface Resealed {
  environment: number;
  name: string;
  from: string;
  value: string;
  keyId: string;
}

/**
 * The variables and secrets of one environment. `set` and `unset` bump the environment row's revision and
 * `changed` in the same transaction, so every instance's poll of the active release sees the change
 * (docs/decisions/variables.md). Key rotation (`sealedUnder`, `reseal`) is service-wide.
 */
export interface VariableStore {
  /** By name. */
  list(): Promise<VariableRow[]>;
  get(name: string): Promise<VariableRow | null>;
  /** Inserts or replaces the variable; answers whether it is new. */
  set(row: VariableRow): Promise<{ created: boolean }>;
  /** Answers whether there was such a variable. */
  unset(name: string): Promise<boolean>;
  /** Secrets of any environment whose key is not `keyId`, `limit` at most (by environment, name). */
  sealedUnder(notKeyId: string, limit: number): Promise<SealedVariable[]>;
  /** Writes the re-sealed values; answers how many were written (a secret set or unset meanwhile is left). */
  reseal(rows: Resealed[]): Promise<number>;
}

/** The dialect's transactional writes (the variable and its environment's revision in one transaction). */
export interface VariableWriter {
  set(environment: number, row: VariableRow): Promise<{ created: boolean }>;
  unset(environment: number, name: string): Promise<boolean>;
}
