import { Cron } from "croner";
import { canonicalJson } from "../lib/canonical-json.ts";
import type { CatchUp, DefinedRelease } from "../sdk/index.ts";
import type { CompiledContract } from "./contract.ts";
import { ReleaseError } from "./errors.ts";

/** A schedule as the release manifest, `describe`, the publish diff and `GET /schedules` show it. */
export interface ScheduleManifest {
  name: string;
  action: string;
  input: Record<string, unknown>;
  cron: string | null;
  every: string | null;
  /** The zone a cron's hours are read in; null for `every`. */
  timezone: string | null;
  catchUp: CatchUp;
}

export interface LoadedSchedule extends ScheduleManifest {
  /** The first tick strictly after `time` (epoch ms); null when the pattern has no further tick. */
  nextAfter(time: number): number | null;
}

const NAME = /^[A-Za-z][A-Za-z0-9_-]{0,99}$/;
const INTERVAL = /^(\d+)(ms|s|m|h|d)$/;
const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const MIN_EVERY_MS = 1_000;
const CATCH_UPS: readonly CatchUp[] = ["none", "latest", "all"];
const KEYS = new Set(["action", "input", "cron", "every", "timezone", "catchUp"]);

/**
 * Checks a release's `schedules` against its own actions and compiles each one's clock. Anything wrong
 * refuses the release (at publish), named `schedules.<name>: …`.
 */
export function compileSchedules(
  declared: DefinedRelease | null,
  actions: ReadonlyMap<string, CompiledContract>,
): ReadonlyMap<string, LoadedSchedule> {
  const compiled = new Map<string, LoadedSchedule>();
  const schedules: unknown = declared?.schedules;
  if (schedules === undefined) return compiled;
  if (typeof schedules !== "object" || schedules === null || Array.isArray(schedules)) {
    throw new ReleaseError("schedules must be an object of named schedules");
  }
  for (const [name, definition] of Object.entries(schedules)) {
    compiled.set(name, compileSchedule(name, definition, actions));
  }
  return compiled;
}

function compileSchedule(
  name: string,
  definition: unknown,
  actions: ReadonlyMap<string, CompiledContract>,
): LoadedSchedule {
  const where = `schedules.${name}`;
  const refuse = (message: string): never => {
    throw new ReleaseError(`${where}: ${message}`);
  };
  if (!NAME.test(name)) refuse("a schedule's name is letters, digits, _ and - (starting with a letter)");
  if (typeof definition !== "object" || definition === null || Array.isArray(definition)) refuse("must be an object");
  const d = definition as Record<string, unknown>;
  const unknownKey = Object.keys(d).find((key) => !KEYS.has(key));
  if (unknownKey !== undefined) refuse(`unknown option "${unknownKey}" (known: ${[...KEYS].join(", ")})`);

  const action = typeof d.action === "string" ? actions.get(d.action) : undefined;
  if (!action) refuse(`action ${JSON.stringify(d.action)} is not an action of this release`);
  const target = action as CompiledContract;
  if (target.contract.files.length > 0) refuse(`${target.contract.name} takes files; a schedule cannot send them`);
  const input = d.input ?? {};
  if (typeof input !== "object" || input === null || Array.isArray(input)) refuse("input must be an object");
  const issues = target.checkInput(input);
  if (issues.length > 0) {
    const listed = issues.map((i) => `${i.where} ${i.message}`).join("; ");
    refuse(`input does not fit ${target.contract.name}'s input schema: ${listed}`);
  }

  const catchUp = d.catchUp ?? "latest";
  if (!CATCH_UPS.includes(catchUp as CatchUp)) refuse(`catchUp must be "none", "latest" or "all"`);
  const manifest = {
    name,
    action: target.contract.name,
    input: input as Record<string, unknown>,
    catchUp: catchUp as CatchUp,
  };

  if ((d.cron === undefined) === (d.every === undefined)) refuse("give either cron or every");
  if (d.every !== undefined) {
    if (d.timezone !== undefined) refuse("timezone applies to cron, not every");
    const everyMs = intervalMs(d.every) ?? refuse(`every must be like "30s", "5m", "1h" or "1d"`);
    if (everyMs < MIN_EVERY_MS) refuse("every must be at least 1s");
    return {
      ...manifest,
      cron: null,
      every: d.every as string,
      timezone: null,
      // On multiples of the interval since the epoch: every instance computes the same ticks.
      nextAfter: (time) => (Math.floor(time / everyMs) + 1) * everyMs,
    };
  }
  if (typeof d.cron !== "string") return refuse("cron must be a string");
  const timezone = d.timezone ?? "UTC";
  if (typeof timezone !== "string" || !isTimeZone(timezone)) {
    refuse(`timezone ${JSON.stringify(timezone)} is not an IANA time zone (e.g. "Europe/Paris")`);
  }
  let cron: Cron;
  try {
    cron = new Cron(d.cron, { timezone: timezone as string, paused: true });
  } catch (error) {
    return refuse(`cron "${d.cron}": ${(error as Error).message}`);
  }
  if (cron.nextRun() === null) refuse(`cron "${d.cron}" never ticks`);
  return {
    ...manifest,
    cron: d.cron,
    every: null,
    timezone: timezone as string,
    nextAfter: (time) => cron.nextRun(new Date(time))?.getTime() ?? null,
  };
}

function intervalMs(value: unknown): number | null {
  const match = typeof value === "string" ? INTERVAL.exec(value) : null;
  if (!match) return null;
  return Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
}

function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat("en", { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

export const scheduleManifest = ({ nextAfter: _, ...manifest }: LoadedSchedule): ScheduleManifest => manifest;

export interface ScheduleChange {
  name: string;
  change: "added" | "removed" | "changed" | "unchanged";
}

/** How a publish changes the schedules (a release stored before schedules existed has none). */
export function diffSchedules(before: ScheduleManifest[] | undefined, after: ScheduleManifest[]): ScheduleChange[] {
  // Canonical: PostgreSQL's jsonb does not keep the key order of a stored manifest.
  const old = new Map((before ?? []).map((s) => [s.name, canonicalJson(s)]));
  const changes: ScheduleChange[] = after.map((s) => {
    const previous = old.get(s.name);
    old.delete(s.name);
    const change = previous === undefined ? "added" : previous === canonicalJson(s) ? "unchanged" : "changed";
    return { name: s.name, change };
  });
  for (const name of old.keys()) changes.push({ name, change: "removed" });
  return changes;
}
