// No preact and no DOM here: test/unit/console-diff.test.ts runs it under Bun.
import type { ActionContract } from "../client/index.ts";

type Schema = Record<string, unknown>;

/** One difference of an action between two releases, said for a person. */
export interface Change {
  /** What changed: `access`, `kind`, `description`, `input`, `output`, `files`. */
  part: string;
  /** The property (`gift`) or JSON pointer (`/additionalProperties`) within that part, when there is one. */
  where?: string;
  text: string;
}

export interface ReleaseDiff {
  added: ActionContract[];
  removed: ActionContract[];
  changed: { name: string; changes: Change[] }[];
  unchanged: string[];
}

const json = (value: unknown) => (value === undefined ? "nothing" : JSON.stringify(value));
const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** What changed from release `from` to release `to`, action by action, in name order. */
export function diffReleases(from: ActionContract[], to: ActionContract[]): ReleaseDiff {
  const before = new Map(from.map((a) => [a.name, a]));
  const after = new Map(to.map((a) => [a.name, a]));
  const byName = (a: ActionContract, b: ActionContract) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  const diff: ReleaseDiff = {
    added: to.filter((a) => !before.has(a.name)).sort(byName),
    removed: from.filter((a) => !after.has(a.name)).sort(byName),
    changed: [],
    unchanged: [],
  };
  for (const next of [...after.values()].sort(byName)) {
    const previous = before.get(next.name);
    if (!previous) continue;
    const changes = actionChanges(previous, next);
    if (changes.length > 0) diff.changed.push({ name: next.name, changes });
    else diff.unchanged.push(next.name);
  }
  return diff;
}

function actionChanges(a: ActionContract, b: ActionContract): Change[] {
  const changes: Change[] = [];
  for (const part of ["kind", "access", "description"] as const) {
    if (a[part] !== b[part]) changes.push({ part, text: `${json(a[part])} → ${json(b[part])}` });
  }
  // The contract hash covers everything but the description: equal hashes, equal schemas and files.
  if (a.contractHash === b.contractHash) return changes;
  changes.push(...schemaChanges("input", a.input, b.input), ...schemaChanges("output", a.output, b.output));
  if (!same(a.files, b.files)) changes.push(...fileChanges(a.files, b.files));
  return changes;
}

/** An object schema's properties one by one (added, removed, changed, now required or optional); the rest as a whole. */
function schemaChanges(part: string, a: Schema, b: Schema): Change[] {
  if (same(a, b)) return [];
  const propsA = a.properties as Record<string, Schema> | undefined;
  const propsB = b.properties as Record<string, Schema> | undefined;
  if (!propsA || !propsB) return [{ part, text: `${json(a)} → ${json(b)}` }];
  const requiredA = new Set((a.required ?? []) as string[]);
  const requiredB = new Set((b.required ?? []) as string[]);
  const changes: Change[] = [];
  for (const name of new Set([...Object.keys(propsA), ...Object.keys(propsB)])) {
    const [was, now] = [propsA[name], propsB[name]];
    const need = requiredB.has(name) ? "required" : "optional";
    if (!was) changes.push({ part, where: name, text: `added (${need}): ${json(now)}` });
    else if (!now) changes.push({ part, where: name, text: "removed" });
    else {
      if (!same(was, now)) changes.push({ part, where: name, text: `${json(was)} → ${json(now)}` });
      if (requiredA.has(name) !== requiredB.has(name)) changes.push({ part, where: name, text: `now ${need}` });
    }
  }
  for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
    if (key === "properties" || key === "required" || same(a[key], b[key])) continue;
    changes.push({ part, where: `/${key}`, text: `${json(a[key])} → ${json(b[key])}` });
  }
  return changes;
}

function fileChanges(a: ActionContract["files"], b: ActionContract["files"]): Change[] {
  const before = new Map(a.map((f) => [f.field, f]));
  const after = new Map(b.map((f) => [f.field, f]));
  const changes: Change[] = [];
  for (const field of new Set([...before.keys(), ...after.keys()])) {
    const [was, now] = [before.get(field), after.get(field)];
    if (same(was, now)) continue;
    if (!was || !now) {
      changes.push({ part: "files", where: field, text: was ? "removed" : `added: ${json(now)}` });
      continue;
    }
    for (const key of ["required", "maxBytes", "contentTypes"] as const) {
      if (!same(was[key], now[key]))
        changes.push({ part: "files", where: field, text: `${key} ${json(was[key])} → ${json(now[key])}` });
    }
  }
  return changes;
}
