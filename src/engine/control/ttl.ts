import { PublicError } from "../../lib/errors.ts";

const UNIT_MS = { m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
/** The longest time-to-live of an environment: a preview is not a place to keep anything. */
export const MAX_TTL_MS = 90 * UNIT_MS.d;

/**
 * A time-to-live as the CLI and the control API take it: a whole number of minutes, hours or days
 * (`30m`, `12h`, `7d`), at most 90 days. Throws 400 `invalid_request` naming the form.
 */
export function parseTtl(ttl: string): number {
  const match = /^([1-9][0-9]{0,5})([mhd])$/.exec(ttl.trim());
  const ms = match ? Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS] : Number.NaN;
  if (!(ms > 0) || ms > MAX_TTL_MS) {
    throw new PublicError(
      "invalid_request",
      `ttl ${JSON.stringify(ttl)} is not a time to live: give minutes, hours or days (30m, 12h, 7d), at most 90d`,
    );
  }
  return ms;
}
