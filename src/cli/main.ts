import { TokenError } from "../auth/tokens.ts";
import { UserError } from "../auth/users.ts";
import { type Config, ConfigError, loadConfig } from "../config.ts";
import { PublicError } from "../lib/errors.ts";
import { createLog } from "../observe/log.ts";
import { ReleaseError } from "../release/errors.ts";
import { dataDirFailure, StartupError } from "../startup.ts";
import { type Command, commandHelp, overview, parseCommand, UsageError } from "./command.ts";
import { commands } from "./commands.ts";
import { commandLine } from "./invocation.ts";

/** `bun run <script> [<subcommand>] [args]` (`actuate …` compiled): finds the command, parses its flags, runs it. */
async function main(argv: string[]): Promise<number> {
  const [script, ...rest] = argv;
  if (script === undefined || script === "--help" || script === "help") {
    (script ? console.log : console.error)(overview(commands));
    return script ? 0 : 1;
  }
  const group = commands.filter((c) => c.name.split(" ")[0] === script);
  if (group.length === 0) throw new UsageError(`unknown command ${JSON.stringify(script)}`, overview(commands));
  const found = find(group, script, rest);
  if (typeof found === "string") {
    console.log(found);
    return 0;
  }
  const { command, args } = found;
  const parsed = parseCommand(command, args);
  if (parsed.help) {
    console.log(commandHelp(command));
    return 0;
  }
  let config: Config | undefined;
  try {
    return await command.run(() => (config ??= loadConfig()), parsed.args, parsed.flags);
  } catch (error) {
    // Whatever a command writes under DATA_DIR (keys, bundles, the spool) is refused for the same reason.
    const failure = error instanceof StartupError ? error : config && dataDirFailure(config.dataDir, error);
    if (!failure || !config) throw error;
    printStartupFailure(failure, config.log.format);
    return 1;
  }
}

/** One line on stderr, without a stack: a JSON object as the server's log lines with LOG_FORMAT=json. */
function printStartupFailure(failure: StartupError, format: Config["log"]["format"]) {
  const message = failure.message.replace(/\s*\n\s*/g, " ");
  if (format !== "json") {
    console.error(`error: ${message}`);
    return;
  }
  const log = createLog({ level: "error", format: "json" }, {}, (line) => process.stderr.write(line));
  log(message, { level: "error", setting: failure.setting });
}

/** The command a script's arguments name, or the help of all its subcommands (`bun run release --help`). */
function find(group: Command[], script: string, rest: string[]): { command: Command; args: string[] } | string {
  const single = group.find((c) => c.name === script);
  if (single) return { command: single, args: rest };
  const [sub, ...args] = rest;
  const command = group.find((c) => c.name === `${script} ${sub}`);
  if (command) return { command, args };
  if (sub === "--help") return group.map(commandHelp).join(`\n\n${"─".repeat(40)}\n\n`);
  const what =
    sub === undefined
      ? `${commandLine(script)} needs a command`
      : `${commandLine(script)} has no command ${JSON.stringify(sub)}`;
  throw new UsageError(what, overview(group, commandLine(script)));
}

try {
  const code = await main(process.argv.slice(2));
  if (code !== -1) process.exit(code);
} catch (error) {
  if (error instanceof UsageError) {
    console.error(`error: ${error.message}\n${error.usage}`);
  } else if (
    error instanceof ConfigError ||
    error instanceof ReleaseError ||
    error instanceof TokenError ||
    error instanceof UserError ||
    error instanceof PublicError
  ) {
    console.error(`error: ${error.message}`);
  } else {
    console.error(error);
  }
  process.exit(1);
}
