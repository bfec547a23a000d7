import type { ExecutionRow } from "../../src/store/rows.ts";

/** A plausible execution row for store-level tests; override what the test is about. */
export const row = (overrides: Partial<ExecutionRow> = {}): ExecutionRow => ({
  id: Bun.randomUUIDv7(),
  requestId: crypto.randomUUID(),
  principalKind: "user",
  principalId: "alice",
  action: "test.echo",
  kind: "function",
  releaseVersion: "t1",
  contractHash: "c".repeat(64),
  inputFingerprint: "f".repeat(64),
  input: { text: "hi", nested: { list: [1, 2] } },
  status: "running",
  output: null,
  errorCode: null,
  errorMessage: null,
  createdAt: Date.now(),
  startedAt: Date.now(),
  finishedAt: null,
  scheduledBy: null,
  ...overrides,
});
