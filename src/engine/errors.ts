import { PublicError } from "../lib/errors.ts";
import type { ValidationIssue } from "../release/contract.ts";

export const invalidRequest = (issues: ValidationIssue[]) =>
  new PublicError("invalid_request", issues[0]?.message ?? "the request is malformed", { details: { issues } });

export const actionNotFound = (name: string) =>
  new PublicError("action_not_found", `no action named ${JSON.stringify(name)} in the active release`);

export const accessDenied = (name: string) =>
  new PublicError("access_denied", `this caller may not run ${JSON.stringify(name)}`);

export const executionNotFound = () => new PublicError("execution_not_found", "no such execution");

export const runNotFound = () => new PublicError("run_not_found", "no such workflow run");

export const scheduledNotFound = () => new PublicError("scheduled_not_found", "no such scheduled invocation");
