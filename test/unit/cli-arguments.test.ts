import { describe, expect, test } from "bun:test";
import { type Command, parseCommand, UsageError } from "../../src/cli/command.ts";

const command: Command = {
  name: "user revoke-session",
  args: ["<sign-in>", "[note]"],
  summary: "a command to parse",
  flags: { url: { type: "string", description: "where" }, yes: { type: "boolean", description: "sure" } },
  env: [],
  examples: [],
  run: async () => 0,
};

describe("parseCommand: a command line's arguments and flags", () => {
  test("a word starting with a single dash is an argument, in its place (a sign-in id may begin with one)", () => {
    expect(parseCommand(command, ["-AbC_dEf-123"]).args).toEqual(["-AbC_dEf-123"]);
    expect(parseCommand(command, ["-a", "--url", "http://x", "-b"])).toMatchObject({
      args: ["-a", "-b"],
      flags: { url: "http://x" },
    });
    expect(parseCommand(command, ["first", "--yes", "-second"])).toMatchObject({
      args: ["first", "-second"],
      flags: { yes: true },
    });
    expect(parseCommand(command, ["--", "--url"]).args).toEqual(["--url"]);
  });

  test("an unknown flag, a flag's missing value and one argument too many are usage errors", () => {
    expect(() => parseCommand(command, ["--bogus"])).toThrow("has no flag --bogus");
    expect(() => parseCommand(command, ["id", "--url"])).toThrow("--url needs a value");
    expect(() => parseCommand(command, ["-a", "-b", "-c"])).toThrow(UsageError);
    expect(() => parseCommand(command, [])).toThrow("missing <sign-in>");
  });
});
