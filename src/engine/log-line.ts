import type { Logger } from "../sdk/index.ts";
import type { LogLevel } from "../store/statuses.ts";

/** The `ctx.log` handed to code: each call becomes one line at its level. */
export function logger(write: (level: LogLevel, line: string) => void): Logger {
  const at =
    (level: LogLevel) =>
    (...args: unknown[]) =>
      write(level, logLine(args));
  return Object.assign(at("info"), { info: at("info"), warn: at("warn"), error: at("error") });
}

/** A `ctx.log(...)` call as one line: strings as they are, anything else as JSON where it can be. */
export function logLine(args: unknown[]): string {
  return args.map(format).join(" ");
}

function format(value: unknown): string {
  if (typeof value === "string") return value;
  try {
    return JSON.stringify(value);
  } catch {
    return String(value);
  }
}

/**
 * Where release code runs from: `<DATA_DIR>/bundles/<…>`, its frames named by the source map after it.
 * The lookbehind starts a match only where a path can start (after a space or "(", or at the start):
 * without it a long word in a thrown message was scanned again from each of its characters, quadratic
 * time on the event loop.
 */
const BUNDLE_PATH = /(?<![^\s(])[^\s(]*\/bundles\//g;

/**
 * What a log says about code that threw: the message and the release code's frames (relative to the
 * release), down to the last of them. The frames below it are the runtime's own and the paths before
 * them the server's disk: a caller reads this line in its execution's log, so neither is kept.
 */
export function thrownLine(error: unknown): string {
  if (!(error instanceof Error)) return `thrown: ${format(error)}`;
  const lines = (error.stack ?? `${error.name}: ${error.message}`).split("\n");
  const frames = lines.findIndex((line) => /^\s+at /.test(line));
  if (frames === -1) return lines.join("\n");
  const lastRelease = lines.findLastIndex((line, i) => i >= frames && line.includes("/bundles/"));
  return lines
    .slice(0, lastRelease === -1 ? frames : lastRelease + 1)
    .join("\n")
    .replace(BUNDLE_PATH, "");
}
