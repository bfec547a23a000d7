import type { Principal } from "../sdk/index.ts";
import type { ExecutionRow } from "../store/types.ts";

/** A user sees its own executions; a service key acts as administrator and sees every one. */
export function canSee(principal: Principal, row: Pick<ExecutionRow, "principalKind" | "principalId">): boolean {
  return principal.kind === "service" || (row.principalKind === principal.kind && row.principalId === principal.id);
}

/** The public shape of an execution: output only once succeeded, error fields only once failed or canceled. */
export interface ExecutionView {
  id: string;
  requestId: string;
  action: string;
  kind: string;
  status: string;
  input: unknown;
  output?: unknown;
  errorCode?: string;
  errorMessage?: string;
  principal: Principal;
  releaseVersion: string;
  contractHash: string;
  uploads: unknown[];
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export function toExecutionView(row: ExecutionRow, uploads: unknown[] = []): ExecutionView {
  const view: ExecutionView = {
    id: row.id,
    requestId: row.requestId,
    action: row.action,
    kind: row.kind,
    status: row.status,
    input: row.input,
    principal: { kind: row.principalKind, id: row.principalId },
    releaseVersion: row.releaseVersion,
    contractHash: row.contractHash,
    uploads,
    createdAt: new Date(row.createdAt).toISOString(),
    startedAt: iso(row.startedAt),
    finishedAt: iso(row.finishedAt),
  };
  if (row.status === "succeeded") view.output = row.output;
  if (row.errorCode !== null) view.errorCode = row.errorCode;
  if (row.errorMessage !== null) view.errorMessage = row.errorMessage;
  return view;
}
