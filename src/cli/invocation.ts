/**
 * How a person runs the CLI here, so that usage, help and messages name commands as they can be typed:
 * `actuate <command>` in the compiled binary (`bun run build`), `bun run <command>` from the repository
 * (package.json has a script for the first word of every command).
 */

/** The compiled binary's modules live in Bun's embedded file system. */
const compiled = Bun.main.startsWith("/$bunfs/");

/** A command as it is typed here: `commandLine("release list")` is `bun run release list` from source. */
export const commandLine = (words: string): string => `${compiled ? "actuate" : "bun run"} ${words}`;

/** Text written as run from the repository (help, examples): each `bun run <command>` as it is typed here. */
export const asInvoked = (text: string): string => (compiled ? text.replaceAll("bun run ", "actuate ") : text);
