/** Every list's `?limit`: 50 when absent, at most 200; past the page, `nextCursor` says where to go on. */
export const PAGE_LIMIT = { default: 50, max: 200 } as const;
