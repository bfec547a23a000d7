/**
 * The server's log: one JSON object a line (level, time, instance, msg, then the fields), or, with
 * LOG_FORMAT=pretty (`bun run dev`), one readable line. Lines written in one turn of the event loop
 * go out in one write, so a request's line costs no system call of its own.
 */

export const LOG_LEVELS = ["debug", "info", "warn", "error"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export type LogFormat = "json" | "pretty";

export type LogFields = { level?: LogLevel } & Record<string, unknown>;
/** What every part of the server logs through: a message, and fields (an `info` line unless `level` says). */
export type Log = ((message: string, fields?: LogFields) => void) & {
  /** The same log with more fields on every line, written once into its lines' prefix (`createLog`'s JSON logs). */
  with?: (added: Record<string, unknown>) => Log;
};

export interface LogSettings {
  level: LogLevel;
  format: LogFormat;
}

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/** Field names that may hold a secret: written as "[redacted]" whatever a caller passes. */
const SECRET_FIELDS = new Set(["authorization", "token", "credential", "password", "key", "secret", "cookie"]);

const COLOURS: Record<LogLevel, string> = { debug: "\x1b[90m", info: "\x1b[36m", warn: "\x1b[33m", error: "\x1b[31m" };
const DIM = "\x1b[2m";
const RESET = "\x1b[0m";

/** Field names seen, and whether each may hold a secret: the few names a server logs, checked once each. */
const secretNames = new Map<string, boolean>();
const MAX_NAMES_REMEMBERED = 1_000;

function isSecretName(name: string): boolean {
  let secret = secretNames.get(name);
  if (secret === undefined) {
    secret = SECRET_FIELDS.has(name.toLowerCase());
    if (secretNames.size < MAX_NAMES_REMEMBERED) secretNames.set(name, secret);
  }
  return secret;
}

function redacted(fields: Record<string, unknown>): Record<string, unknown> {
  for (const name in fields) {
    if (isSecretName(name)) return redactAll(fields);
  }
  return fields;
}

function redactAll(fields: Record<string, unknown>): Record<string, unknown> {
  const copy: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(fields)) {
    copy[name] = isSecretName(name) ? "[redacted]" : value;
  }
  return copy;
}

/** The time of a JSON line: lines written in the same millisecond (most, under load) share the text. */
function clock(): () => string {
  let lastMs = Number.NaN;
  let lastText = "";
  return () => {
    const ms = Date.now();
    if (ms !== lastMs) {
      lastMs = ms;
      lastText = new Date(ms).toISOString();
    }
    return lastText;
  };
}

const shownValue = (value: unknown) => (typeof value === "string" ? value : JSON.stringify(value));

/** `HH:MM:SS.mmm LEVEL message key=value …`, coloured on a terminal. */
function prettyLine(level: LogLevel, at: Date, message: string, fields: Record<string, unknown>, colour: boolean) {
  const time = at.toISOString().slice(11, 23);
  const extra = Object.entries(fields)
    .filter(([, value]) => value !== undefined)
    .map(([name, value]) => `${name}=${shownValue(value)}`)
    .join(" ");
  const label = level.toUpperCase().padEnd(5);
  if (!colour) return `${time} ${label} ${message}${extra ? `  ${extra}` : ""}\n`;
  return `${DIM}${time}${RESET} ${COLOURS[level]}${label}${RESET} ${message}${extra ? `  ${DIM}${extra}${RESET}` : ""}\n`;
}

/** Collects text and writes it once per turn of the event loop (and at exit, what is left). */
function batchedWriter(write: (text: string) => void): (text: string) => void {
  let pending = "";
  const flush = () => {
    const text = pending;
    pending = "";
    if (text) write(text);
  };
  process.on("exit", flush);
  return (text) => {
    if (pending === "") setImmediate(flush);
    pending += text;
  };
}

/** JSON lines are batched; readable ones go out at once, in order with what the CLI prints beside them. */
const stdoutWriter = (format: LogFormat) =>
  format === "json"
    ? batchedWriter((text) => process.stdout.write(text))
    : (text: string) => process.stdout.write(text);

export function createLog(
  settings: LogSettings,
  base: Record<string, unknown> = {},
  write: (text: string) => void = stdoutWriter(settings.format),
): Log {
  const threshold = RANK[settings.level];
  const colour = settings.format === "pretty" && process.stdout.isTTY === true && !process.env.NO_COLOR;
  const prefix = JSON.stringify(base).slice(1, -1);
  const time = clock();
  const log: Log = (message, fields) => {
    const level = fields?.level ?? "info";
    if (RANK[level] < threshold) return;
    if (settings.format === "pretty") {
      const { level: _, ...rest } = fields ?? {};
      write(prettyLine(level, new Date(), message, redacted(rest), colour));
      return;
    }
    // `level: undefined` drops the field's own copy (JSON leaves undefined out) without copying the rest twice.
    const body = JSON.stringify({ msg: message, ...(fields && redacted(fields)), level: undefined }).slice(1);
    write(`{"level":"${level}","time":"${time()}"${prefix ? `,${prefix}` : ""},${body}\n`);
  };
  // Pretty lines show no base fields: there the added ones go with each line's own.
  if (settings.format === "json") log.with = (added) => createLog(settings, { ...base, ...added }, write);
  return log;
}

/** Whether a line at `level` would be written (so a caller can skip building its fields). */
export const logs = (settings: LogSettings, level: LogLevel) => RANK[level] >= RANK[settings.level];

/**
 * A log whose every line carries these fields too (hosting mode: an environment's `environment`), written
 * through `log`'s writer: in its JSON lines' prefix when it has one (no cost a line), else with each line's
 * fields (a caller's field of the same name wins there).
 */
export function withFields(log: Log, added: Record<string, unknown>): Log {
  if (log.with) return log.with(added);
  return (message, fields) => log(message, fields === undefined ? added : { ...added, ...fields });
}
