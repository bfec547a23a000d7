import type { ActionContract } from "../../release/contract.ts";
import type { Principal } from "../../sdk/index.ts";
import type { ExecutionRow, RunRow } from "../../store/rows.ts";

/**
 * The rows a workflow invocation admits: its execution and its run, one id for both. With a lease (a
 * worker slot of this process is free) the run starts `running` here at once; without, it is `queued`.
 */
export function newRun(request: {
  principal: Principal;
  requestId: string;
  input: unknown;
  contract: Pick<ActionContract, "name" | "contractHash">;
  releaseVersion: string;
  fingerprint: string;
  lease: { owner: string; until: number } | null;
  /** A delayed invocation's: the execution whose `ctx.schedule` made it. */
  scheduledBy?: string;
  now: number;
}): { execution: ExecutionRow; run: RunRow } {
  const { principal, requestId, input, contract, releaseVersion, lease, now } = request;
  const id = Bun.randomUUIDv7();
  const status = lease ? "running" : "queued";
  const caller = { principalKind: principal.kind, principalId: principal.id };
  const ended = { output: null, errorCode: null, errorMessage: null, finishedAt: null };
  return {
    execution: {
      id,
      requestId,
      ...caller,
      action: contract.name,
      kind: "workflow",
      releaseVersion,
      contractHash: contract.contractHash,
      inputFingerprint: request.fingerprint,
      input,
      status,
      ...ended,
      createdAt: now,
      startedAt: lease ? now : null,
      scheduledBy: request.scheduledBy ?? null,
    },
    run: {
      id,
      requestId,
      workflow: contract.name,
      releaseVersion,
      ...caller,
      principalClaims: principal.claims ? { ...principal.claims } : null,
      input,
      status,
      ...ended,
      cancelRequested: false,
      leaseOwner: lease?.owner ?? null,
      leaseExpiresAt: lease?.until ?? null,
      wakeAt: now,
      createdAt: now,
      updatedAt: now,
    },
  };
}
