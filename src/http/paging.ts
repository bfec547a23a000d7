import { Type } from "@sinclair/typebox";
import { invalidRequest } from "../engine/errors.ts";
import type { Page } from "../engine/page.ts";
import { uuidOrNull } from "../lib/ids.ts";
import { PAGE_LIMIT } from "../wire/paging.ts";

/** The paging parameters every list shares: `?limit` (PAGE_LIMIT) and an opaque `cursor`. */
export const pageParams = {
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: PAGE_LIMIT.max })),
  cursor: Type.Optional(Type.String({ pattern: "^[A-Za-z0-9_-]{1,200}$" })),
};

export const DEFAULT_PAGE = PAGE_LIMIT.default;

/** What a list asks the engine for: `?limit` rows (by default DEFAULT_PAGE) after the cursor's. */
export const pageRequest = (query: { limit?: number; cursor?: string }) => ({
  limit: query.limit ?? DEFAULT_PAGE,
  afterId: query.cursor === undefined ? undefined : decodeCursor(query.cursor),
});

/** The cursor of the page after this one; null after the last. */
export const nextCursor = (page: Page<unknown>) => (page.lastId ? encodeCursor(page.lastId) : null);

/** A cursor this server did not give out (400 naming `?cursor`). */
export const badCursor = () =>
  invalidRequest([{ where: "/query/cursor", code: "invalid", message: "cursor is not one this server gave out" }]);

// Cursors are opaque to callers; today they carry the last id seen (ids are time-ordered UUIDv7).
const encodeCursor = (id: string) => Buffer.from(id).toString("base64url");

function decodeCursor(cursor: string): string {
  const id = uuidOrNull(Buffer.from(cursor, "base64url").toString());
  if (id === null) {
    throw badCursor();
  }
  return id;
}

/** A log page's cursor: the seq of the last line read (a log's lines are numbered from 0). */
export const encodeSeqCursor = (seq: number) => Buffer.from(`seq:${seq}`).toString("base64url");

export function decodeSeqCursor(cursor: string): number {
  const match = /^seq:(\d{1,9})$/.exec(Buffer.from(cursor, "base64url").toString());
  if (!match) {
    throw badCursor();
  }
  return Number(match[1]);
}
