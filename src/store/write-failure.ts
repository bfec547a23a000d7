import type { ExecutionSettlement } from "./executions.ts";

/** A write that must change a row changed none (its entity was deleted meanwhile). */
export class WriteFailed extends Error {
  override name = "WriteFailed";
}

/** The reason an execution's writes could not commit, or null when the error is not about them. */
export function writeFailure(error: unknown): string | null {
  if (error instanceof WriteFailed) return error.message;
  const code = (error as { code?: string; errno?: number }).code;
  // Constraint violations: a unique attribute taken, a duplicate id; both databases name them so.
  if (code === "23505" || code === "23503" || String(code).startsWith("SQLITE_CONSTRAINT")) {
    return `the writes could not be stored: ${(error as Error).message}`;
  }
  return null;
}

/** A step's data writes the data refused, as the run store answers it; any other error is the store failing. */
export function refusal(error: unknown): { refused: string } {
  const refused = writeFailure(error);
  if (refused === null) throw error;
  return { refused };
}

export const failedWrites = (s: ExecutionSettlement, reason: string): ExecutionSettlement => ({
  status: "failed",
  output: null,
  errorCode: "action_failed",
  errorMessage: reason,
  finishedAt: s.finishedAt,
});
