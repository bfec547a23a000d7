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

/** What the server log says about code that threw: the stack (its frames name release files through the source map). */
export function thrownLine(error: unknown): string {
  return error instanceof Error ? (error.stack ?? `${error.name}: ${error.message}`) : `thrown: ${format(error)}`;
}
