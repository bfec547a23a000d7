// No preact and no DOM here: test/unit/console-search.test.ts runs it under Bun.

/** What a search box's text may be, and so which reads can find it. */
export type SearchQuery =
  | { kind: "empty" }
  /** A UUID: an execution's or a run's id, or a request id (the reads answer which). */
  | { kind: "id"; id: string }
  /** `user:alice`, `service:schedule:nightly`: that caller's executions. */
  | { kind: "caller"; caller: string }
  /** Anything else: an action's name (contains) and a file's path (starts with). */
  | { kind: "text"; text: string };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
// As `GET /executions?caller=` takes it.
// biome-ignore lint/suspicious/noControlCharactersInRegex: the pattern refuses them, as the server's does
const CALLER = /^(user|service):[^\u0000-\u001f]{1,256}$/;

export function classify(input: string): SearchQuery {
  const text = input.trim();
  if (!text) return { kind: "empty" };
  if (UUID.test(text)) return { kind: "id", id: text.toLowerCase() };
  if (CALLER.test(text)) return { kind: "caller", caller: text };
  return { kind: "text", text };
}

/** Actions whose name holds the text (any case), those it begins first, at most `limit`. */
export function matchingNames(names: string[], text: string, limit = 5): string[] {
  const needle = text.toLowerCase();
  const found = names.filter((n) => n.toLowerCase().includes(needle));
  const starts = (n: string) => (n.toLowerCase().startsWith(needle) ? 0 : 1);
  return found.sort((a, b) => starts(a) - starts(b) || (a < b ? -1 : 1)).slice(0, limit);
}
