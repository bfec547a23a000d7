import { existsSync } from "node:fs";
import { join } from "node:path";
import type { Config } from "../config.ts";
import { variableAdminOver } from "../engine/control/variables.ts";
import type { VariableView } from "../engine/variables.ts";
import { PublicError } from "../lib/errors.ts";
import { secretsSealer } from "../startup.ts";
import type { Store } from "../store/store.ts";
import { commandLine } from "./invocation.ts";
import { environmentNamed } from "./org.ts";
import { publisher } from "./release.ts";
import { remote } from "./remote.ts";
import { printTable } from "./token.ts";
import { withStore } from "./with-store.ts";

/** What `vars` does to one environment's variables, in the database or over HTTP. */
interface VariablesTarget {
  list(): Promise<VariableView[]>;
  set(name: string, change: { value: string; secret?: boolean }): Promise<{ variable: VariableView; created: boolean }>;
  unset(name: string): Promise<void>;
}

/** A handle is a DNS label (lowercase); a variable's name is an identifier. */
const HANDLE = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
const NAME = /^[A-Z_][A-Z0-9_]{0,127}$/;

const PIPE_IT = (name: string, environment?: string) =>
  `a value is read from standard input, never from the command line (shell history, ps): printf %s "$VALUE" | ${commandLine(
    `vars set ${environment ? `${environment} ` : ""}${name}`,
  )}`;

/**
 * `vars set [<environment>] NAME`: the positionals as the environment and the name. A second positional
 * where the first cannot be a handle or the second a name is a value typed on the command line: refused
 * before anything is read or sent. (The mode does not decide: the CLI reaches a hosting database's
 * environments without SERVICE_URL, as `env create` does.)
 */
export function setArguments(args: string[]): { environment?: string; name: string } {
  if (args.length >= 3) throw new PublicError("invalid_request", PIPE_IT(args[1] as string, args[0]));
  if (args.length === 2) {
    const [first, second] = args as [string, string];
    if (!HANDLE.test(first) || !NAME.test(second)) {
      throw new PublicError("invalid_request", PIPE_IT(first));
    }
    return { environment: first, name: second };
  }
  return { name: args[0] as string };
}

/** `vars list|unset [<environment>] …`: the environment when given. */
const environmentAndName = (args: string[]) =>
  args.length === 2
    ? { environment: args[0], name: args[1] as string }
    : { environment: undefined, name: args[0] as string };

/** The whole of standard input, one trailing newline trimmed; nothing is refused. */
async function valueFromStdin(name: string): Promise<string> {
  if (process.stdin.isTTY) console.error(`type the value of ${name}, then Ctrl-D (it is not echoed back)`);
  const value = (await Bun.stdin.text()).replace(/\r?\n$/, "");
  if (value === "") throw new PublicError("invalid_request", `no value on standard input; ${PIPE_IT(name)}`);
  return value;
}

interface VarsFlags {
  url?: string;
}

/** Opens the target: over HTTP with --url (the environment's host, or the apex when an environment is named), else the database. */
async function withTarget(
  config: () => Config,
  environment: string | undefined,
  flags: VarsFlags,
  use: (target: VariablesTarget) => Promise<number>,
): Promise<number> {
  if (flags.url) return use(remoteTarget(flags.url, environment));
  const settings = config();
  if (environment === undefined && settings.hosting) {
    throw new PublicError("invalid_request", "hosting mode: name the environment, e.g. vars list acme-prod");
  }
  return withStore(settings, async (store) => use(await localTarget(settings, store, environment)));
}

function remoteTarget(url: string, environment: string | undefined): VariablesTarget {
  const api = remote(url);
  const base = environment === undefined ? "/variables" : `/environments/${encodeURIComponent(environment)}/variables`;
  const one = (name: string) => `${base}/${encodeURIComponent(name)}`;
  return {
    list: async () => (await api.request<{ items: VariableView[] }>(base)).items,
    async set(name, change) {
      const before = (await api.request<{ items: VariableView[] }>(base)).items.find((v) => v.name === name);
      const variable = await api.request<VariableView>(one(name), { method: "PUT", body: change });
      return { variable, created: before?.set !== true };
    },
    async unset(name) {
      await api.request(one(name), { method: "DELETE" });
    },
  };
}

async function localTarget(config: Config, store: Store, environment: string | undefined): Promise<VariablesTarget> {
  const id = environment === undefined ? 1 : (await environmentNamed(store, environment)).id;
  // SECRETS_KEY, else the development key `dev` keeps in DATA_DIR when there is one (never made here).
  const sealer = await secretsSealer(config, { keyFile: existsSync(join(config.dataDir, "secrets-key")) });
  const admin = await variableAdminOver(store.environment(id), sealer);
  const cli = { kind: "service", id: "cli" } as const;
  return {
    list: () => admin.list(cli),
    set: (name, change) => admin.set(cli, name, change, publisher()),
    unset: (name) => admin.unset(cli, name),
  };
}

export async function varsSet(
  config: () => Config,
  args: string[],
  flags: VarsFlags & { secret: boolean },
): Promise<number> {
  const { environment, name } = setArguments(args);
  const value = await valueFromStdin(name);
  return withTarget(config, environment, flags, async (target) => {
    const { variable, created } = await target.set(name, { value, secret: flags.secret || undefined });
    const where = environment ? ` in ${environment}` : "";
    console.log(`${created ? "set" : "replaced"} ${variable.secret ? "secret" : "variable"} ${variable.name}${where}`);
    return 0;
  });
}

const MASK = "••••";

export async function varsList(config: () => Config, args: string[], flags: VarsFlags): Promise<number> {
  const environment = args[0];
  return withTarget(config, environment, flags, async (target) => {
    const items = await target.list();
    if (items.length === 0) {
      console.log(
        `no variables${environment ? ` in ${environment}` : ""}; set one with ${commandLine(`vars set ${environment ? `${environment} ` : ""}NAME`)}`,
      );
      return 0;
    }
    printTable([
      ["NAME", "SECRET", "VALUE", "UPDATED", "BY", "STATE"],
      ...items.map((v) => [
        v.name,
        v.secret ? "yes" : "no",
        v.secret ? (v.set ? MASK : "-") : (v.value ?? "-"),
        v.updatedAt ?? "-",
        v.updatedBy ?? "-",
        stateOf(v),
      ]),
    ]);
    return 0;
  });
}

/** What the release makes of it: a required one unset is what blocks a publish. */
const stateOf = (v: VariableView) =>
  v.required && !v.set ? "MISSING" : v.required ? "required" : v.declared ? "declared" : "undeclared";

export async function varsUnset(config: () => Config, args: string[], flags: VarsFlags): Promise<number> {
  const { environment, name } = environmentAndName(args);
  return withTarget(config, environment, flags, async (target) => {
    await target.unset(name);
    console.log(`unset ${name}${environment ? ` in ${environment}` : ""}`);
    return 0;
  });
}
