import type { ValidationIssue } from "../release/contract.ts";

/**
 * A refusal the caller can act on. `code` is the public error code; adapters (http/, mcp/) map it to
 * their status and shape. Anything thrown that is not an EngineError is a bug.
 */
export class EngineError extends Error {
  override name = "EngineError";
  constructor(
    readonly code: EngineErrorCode,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

export type EngineErrorCode =
  | "invalid_request"
  | "access_denied"
  | "action_not_found"
  | "action_contract_validation_failed"
  | "REQUEST_CONFLICT"
  | "execution_not_found"
  | "run_not_found"
  | "run_not_cancelable"
  | "no_active_release";

export const invalidRequest = (issues: ValidationIssue[]) =>
  new EngineError("invalid_request", issues[0]?.message ?? "the request is malformed", { details: { issues } });

export const actionNotFound = (name: string) =>
  new EngineError("action_not_found", `no action named ${JSON.stringify(name)} in the active release`);

export const accessDenied = (name: string) =>
  new EngineError("access_denied", `this caller may not run ${JSON.stringify(name)}`);

export const executionNotFound = () => new EngineError("execution_not_found", "no such execution");

export const runNotFound = () => new EngineError("run_not_found", "no such workflow run");
