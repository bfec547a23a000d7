import { parseArgs } from "node:util";
import { type Config, describeEnvironment, type EnvName } from "../config.ts";
import { asInvoked, commandLine } from "./invocation.ts";

export interface Flag {
  type: "string" | "boolean";
  /** The value's placeholder in the usage line (string flags), e.g. `<dir>`. */
  value?: string;
  required?: boolean;
  description: string;
}

export type FlagValues = Record<string, string | boolean | undefined>;

/** One CLI command (`dev`, `release publish`, …): what its --help says, and how it runs. */
export interface Command {
  /** The words after the CLI's name (`bun run`, `actuate`): the script, then the subcommand if any. */
  name: string;
  /** Positional arguments, all required, e.g. `["<dir>"]`. */
  args?: string[];
  /** Why more positionals than `args` are refused, when not only a usage slip (a value that must not be typed). */
  tooManyArguments?: string;
  summary: string;
  /** More about what it does, shown by --help. Written, as the examples, with `bun run` (see asInvoked). */
  details?: string;
  flags?: Record<string, Flag>;
  /** The environment variables it reads (with their defaults in --help). */
  env: readonly EnvName[];
  examples: string[];
  run(config: () => Config, args: string[], flags: FlagValues): Promise<number>;
}

/** A command line the command cannot take: its message and the command's usage go to stderr, exit 1. */
export class UsageError extends Error {
  override name = "UsageError";
  constructor(
    message: string,
    readonly usage: string,
  ) {
    super(message);
  }
}

const HELP: Flag = { type: "boolean", description: "show this text" };

/** Parses a command's arguments: an unknown flag, a missing value or argument, or one too many is a UsageError. */
export function parseCommand(command: Command, argv: string[]): { args: string[]; flags: FlagValues; help: boolean } {
  const flags: Record<string, Flag> = { ...command.flags, help: HELP };
  const fail = (message: string) => new UsageError(message, usageLine(command));
  // Lenient first, to name the offending flag ourselves; parseArgs' strict messages are about positionals.
  const { tokens } = parseArgs({ args: argv, options: flags, strict: false, allowPositionals: true, tokens: true });
  // No flag has a one-letter form, so a word that starts with a single "-" is an argument: a sign-in's id
  // (`user revoke-session`) may begin with one.
  const dashWords = new Set<number>();
  for (const token of tokens) {
    if (token.kind !== "option") continue;
    if (!argv[token.index]?.startsWith("--")) {
      dashWords.add(token.index);
      continue;
    }
    const flag = flags[token.name];
    if (!flag) throw fail(`${commandLine(command.name)} has no flag ${token.rawName}`);
    if (flag.type === "string" && token.value === undefined) throw fail(`${token.rawName} needs a value`);
    if (flag.type === "boolean" && token.value !== undefined) throw fail(`${token.rawName} takes no value`);
  }
  const { values } = parseArgs({
    args: argv.filter((_, index) => !dashWords.has(index)),
    options: flags,
    allowPositionals: true,
  });
  const at = tokens.flatMap((token) => (token.kind === "positional" ? [token.index] : []));
  const positionals = [...new Set([...at, ...dashWords])].sort((a, b) => a - b).map((index) => argv[index] as string);
  if (values.help) return { args: positionals, flags: values, help: true };
  const absent = Object.entries(command.flags ?? {}).find(
    ([name, flag]) => flag.required && values[name] === undefined,
  );
  if (absent) throw fail(`missing --${absent[0]} ${absent[1].value ?? "<value>"}`);
  const expected = command.args ?? [];
  // `[name]` is optional.
  const required = expected.filter((arg) => !arg.startsWith("["));
  if (positionals.length < required.length) throw fail(`missing ${required[positionals.length]}`);
  if (positionals.length > expected.length) {
    throw fail(command.tooManyArguments ?? `unexpected argument ${JSON.stringify(positionals.at(-1))}`);
  }
  return { args: positionals, flags: values, help: false };
}

export function usageLine(command: Command): string {
  const flags = Object.entries(command.flags ?? {}).map(([name, flag]) => {
    const text = flag.type === "string" ? `--${name} ${flag.value ?? "<value>"}` : `--${name}`;
    return flag.required ? text : `[${text}]`;
  });
  return `usage: ${[commandLine(command.name), ...(command.args ?? []), ...flags].join(" ")}`;
}

/** The whole --help of one command: usage, what it does, flags, environment (with defaults), examples. */
export function commandHelp(command: Command): string {
  const flags = Object.entries({ ...command.flags, help: HELP }).map(([name, flag]) => [
    flag.type === "string" ? `--${name} ${flag.value ?? "<value>"}` : `--${name}`,
    flag.description,
  ]);
  const width = Math.max(...flags.map(([left]) => left?.length ?? 0));
  const sections = [
    `${usageLine(command)}\n\n${command.summary}${command.details ? `\n${command.details}` : ""}`,
    `flags:\n${flags.map(([left = "", right]) => `  ${left.padEnd(width)}  ${right}`).join("\n")}`,
    command.env.length > 0
      ? `environment (name, default, meaning):\n${describeEnvironment(command.env).join("\n")}`
      : "environment: none read",
    `examples:\n${command.examples.map((line) => `  ${line}`).join("\n")}`,
  ];
  return asInvoked(sections.join("\n\n"));
}

/** One line per command, for the CLI alone, or a script without a command or with --help. */
export function overview(commands: readonly Command[], title = "commands"): string {
  const width = Math.max(...commands.map((c) => c.name.length));
  const lines = commands.map((c) => `  ${commandLine(c.name.padEnd(width))}  ${c.summary}`);
  return `${title}:\n${lines.join("\n")}\n\n${commandLine("<command> --help")} shows a command's flags, environment and examples.`;
}
