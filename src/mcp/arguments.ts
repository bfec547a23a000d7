import { MAX_JSON_DEPTH, nestsDeeperThan, tooDeepMessage } from "../lib/json-depth.ts";
import { isObject } from "../lib/values.ts";

/**
 * Set by the endpoint when a call's `arguments` was not an object (the SDK would refuse it with a schema
 * dump before any tool code runs): the call is answered as an input refusal instead.
 */
export const INVALID_ARGUMENTS_META = "dev.service/invalidArguments";

/**
 * A tools/call whose `arguments` is not an object would be refused by the SDK's schema check with a
 * zod dump (-32602) before any tool code runs; one nested too deep would reach recursive code. Either is
 * passed on with empty arguments and a marker naming the issue, so the tool answers a readable input
 * refusal like any other.
 */
export function markInvalidArguments(message: unknown): unknown {
  if (!isObject(message) || message.method !== "tools/call" || !isObject(message.params)) return message;
  const problem = argumentsProblem(message.params.arguments);
  if (problem === null) return message;
  const meta = isObject(message.params._meta) ? message.params._meta : {};
  return {
    ...message,
    params: { ...message.params, arguments: {}, _meta: { ...meta, [INVALID_ARGUMENTS_META]: problem } },
  };
}

/** Why `arguments` cannot be a tool's input (the issue a refusal names), or null when it can. */
function argumentsProblem(args: unknown): { code: string; message: string } | null {
  if (args === undefined) return null;
  if (isObject(args)) {
    // The object is the input, one level below the body's root.
    return nestsDeeperThan(args, MAX_JSON_DEPTH - 1) ? { code: "too_deep", message: tooDeepMessage } : null;
  }
  const type = args === null ? "null" : Array.isArray(args) ? "an array" : `a ${typeof args}`;
  return { code: "invalid_type", message: `arguments must be an object, not ${type}` };
}
