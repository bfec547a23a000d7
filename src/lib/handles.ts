import { PublicError } from "./errors.ts";

/**
 * An organization's or environment's handle: a DNS label (an environment is `<handle>.<service domain>`),
 * lowercase letters, digits and hyphens, not starting or ending with a hyphen, 1-63 characters.
 */
export const HANDLE = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/** A handle that is not a DNS label. */
export class HandleError extends PublicError {
  override name = "HandleError";
  constructor(handle: string) {
    super(
      "invalid_request",
      `${JSON.stringify(handle)} is not a handle: lowercase letters, digits and hyphens (not first or last), at most 63`,
      { handle },
    );
  }
}

/** Answers `handle` when it is a DNS label, else throws HandleError. */
export function checkHandle(handle: string): string {
  if (!HANDLE.test(handle)) throw new HandleError(handle);
  return handle;
}
