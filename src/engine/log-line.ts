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
