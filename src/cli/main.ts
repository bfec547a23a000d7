import { parseArgs } from "node:util";
import { TokenError } from "../auth/tokens.ts";
import { ConfigError, loadConfig } from "../config.ts";
import { ReleaseError } from "../release/errors.ts";
import { releaseCommand } from "./release.ts";
import { serveCommand } from "./serve.ts";
import { tokenCommand } from "./token.ts";

const usage = `usage:
  bun run dev     [--release <dir>]        serve, republishing the release folder on every change
  bun run start   [--release <dir>]        publish <dir> if it differs from the active release, then serve
                  [--insecure-no-auth]     /mcp without a credential (loopback only; for the MCP conformance suite)
  bun run release publish <dir> [--version <v>] [--force]   --force: even if the schema change orphans stored data
  bun run release list
  bun run release activate <version>       switch the live release (also the rollback)
  bun run token create --user <id>         prints the new token alone on the last line
  bun run token revoke <token-prefix>`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: {
      release: { type: "string" },
      version: { type: "string" },
      user: { type: "string" },
      "insecure-no-auth": { type: "boolean" },
      force: { type: "boolean" },
      help: { type: "boolean" },
    },
  });
  if (!command || values.help) {
    console.log(usage);
    return command ? 0 : 1;
  }
  const config = loadConfig();
  switch (command) {
    case "dev":
    case "start":
      return serveCommand(config, {
        watch: command === "dev",
        release: values.release,
        insecureNoAuth: values["insecure-no-auth"] ?? false,
      });
    case "release":
      return releaseCommand(config, positionals, values);
    case "token":
      return tokenCommand(config, positionals, values);
    default:
      console.error(`unknown command ${JSON.stringify(command)}\n${usage}`);
      return 1;
  }
}

try {
  const code = await main(process.argv.slice(2));
  if (code !== -1) process.exit(code);
} catch (error) {
  if (error instanceof ConfigError || error instanceof ReleaseError || error instanceof TokenError) {
    console.error(`error: ${error.message}`);
  } else if (error instanceof TypeError && "code" in error && String(error.code).startsWith("ERR_PARSE_ARGS")) {
    console.error(`error: ${error.message}\n${usage}`);
  } else {
    console.error(error);
  }
  process.exit(1);
}
