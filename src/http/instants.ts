import { Type } from "@sinclair/typebox";
import { invalidRequest } from "../engine/errors.ts";
import { UUIDV7_MAX_MS } from "../lib/ids.ts";

/**
 * An ISO 8601 instant as a query parameter: a date (`2026-11-23`, midnight UTC) or a date and time with
 * its zone (`2026-11-23T10:00:00Z`, `…+01:00`). A time without a zone is refused: whose local time?
 */
export const InstantParam = Type.String({
  pattern: "^\\d{4}-\\d{2}-\\d{2}(T\\d{2}:\\d{2}(:\\d{2}(\\.\\d{1,9})?)?(Z|[+-]\\d{2}:\\d{2}))?$",
  description: "ISO 8601 instant, e.g. 2026-11-23T10:00:00Z",
});

/** Milliseconds of an InstantParam; a calendar date that does not exist (`2026-02-30`) is invalid_request. */
export function instantMs(value: string | undefined, param: string): number | undefined {
  if (value === undefined) return undefined;
  const ms = Date.parse(value);
  const day = value.slice(0, 10);
  // Date.parse rolls 2026-02-30 over to March; a real date reads back the same.
  const sameDay = Number.isFinite(ms) && new Date(Date.parse(day)).toISOString().slice(0, 10) === day;
  if (!sameDay || ms < 0 || ms > UUIDV7_MAX_MS) {
    throw invalidRequest([
      {
        where: `/query/${param}`,
        code: "invalid",
        message: `${param}: ${JSON.stringify(value)} is not a valid instant`,
      },
    ]);
  }
  return ms;
}
