import type { VariableSnapshot } from "./variable-snapshot.ts";

/**
 * Replaces the plaintext of an environment's secrets by `[secret NAME]` in what leaves a handler (its
 * output, its error, its log lines, a step's result). Only the values as they are: a secret transformed
 * (encoded, split, reversed) is not recognised (docs/decisions/redaction.md).
 */
export interface Redactor {
  /** The text with every occurrence of a secret's value replaced (the same string when none occurs). */
  text(text: string): string;
  /** The JSON value with every string and key redacted; the same value (no copy) when nothing matched. */
  json<T>(value: T): T;
}

/** One redactor per snapshot: a snapshot is kept until the environment's variables change. */
const bySnapshot = new WeakMap<VariableSnapshot, Redactor>();

/**
 * The redactor of a snapshot's secrets, or null when it has none (what an invocation of an environment
 * without secrets pays: this length check). Built once per snapshot, not per invocation.
 */
export function redactorFor(snapshot: VariableSnapshot): Redactor | null {
  if (snapshot.secrets.length === 0) return null;
  let redactor = bySnapshot.get(snapshot);
  if (!redactor) {
    redactor = buildRedactor(snapshot.secrets);
    bySnapshot.set(snapshot, redactor);
  }
  return redactor;
}

/** The text redacted, or as it is without a redactor. */
export const redactText = (redactor: Redactor | null, text: string): string =>
  redactor === null ? text : redactor.text(text);

function buildRedactor(secrets: VariableSnapshot["secrets"]): Redactor {
  const names = new Map<string, string>();
  // Longer values first: one that holds another is replaced whole, not around the shorter one.
  for (const { name, value } of [...secrets].sort((a, b) => b.value.length - a.value.length)) {
    // An empty value would match everywhere; values shorter than 8 characters are refused when set.
    if (value !== "" && !names.has(value)) names.set(value, `[secret ${name}]`);
  }
  if (names.size === 0) return { text: (text) => text, json: (value) => value };
  const pattern = new RegExp([...names.keys()].map(escapeRegExp).join("|"), "g");
  const replace = (found: string) => names.get(found) ?? found;
  // `test` then `replace`: the common case (nothing found) allocates nothing. The pattern is global, so
  // `test` moves lastIndex: reset before each use.
  const text = (input: string): string => {
    pattern.lastIndex = 0;
    if (!pattern.test(input)) return input;
    pattern.lastIndex = 0;
    return input.replace(pattern, replace);
  };
  const json = <T>(value: T): T => redactJson(value, text) as T;
  return { text, json };
}

/** Copy on write: a container is copied only when something under it changed. */
function redactJson(value: unknown, text: (input: string) => string): unknown {
  if (typeof value === "string") return text(value);
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) {
    let copy: unknown[] | null = null;
    for (let i = 0; i < value.length; i++) {
      const item = value[i];
      const redacted = redactJson(item, text);
      if (redacted !== item) {
        copy ??= value.slice();
        copy[i] = redacted;
      }
    }
    return copy ?? value;
  }
  const object = value as Record<string, unknown>;
  const keys = Object.keys(object);
  // Entries (not assignments) once something changed: a "__proto__" key stays an own key.
  let entries: [string, unknown][] | null = null;
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] as string;
    const item = object[key];
    const newKey = text(key);
    const newItem = redactJson(item, text);
    if (entries === null && (newKey !== key || newItem !== item)) {
      entries = keys.slice(0, i).map((k) => [k, object[k]]);
    }
    entries?.push([newKey, newItem]);
  }
  return entries === null ? value : Object.fromEntries(entries);
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\/-]/g, "\\$&");
