import { ENV_NAMES, type EnvName } from "../config.ts";
import type { Command, Flag } from "./command.ts";
import { envCreate, envDelete, envFork, envGrant, envGrants, envList, envRevoke, envSchedules } from "./env.ts";
import { instancesList } from "./instances.ts";
import { commandLine } from "./invocation.ts";
import { keyCreate, keyCreateStored, keyList, keyRevoke } from "./key.ts";
import { orgCreate, orgList } from "./org.ts";
import { releaseActivate, releaseList, releasePromote, releasePublish, releaseTypesCommand } from "./release.ts";
import { secretsRotateKey } from "./secrets.ts";
import { serveCommand } from "./serve.ts";
import { userRevokeSession, userSessions } from "./sign-ins.ts";
import { tokenCreate, tokenList, tokenRevoke } from "./token.ts";
import { userAdd, userDisable, userEnable, userList } from "./user.ts";
import { varsList, varsSet, varsUnset } from "./vars.ts";

const STORE_ENV: EnvName[] = ["DATABASE_URL", "DATA_DIR"];
/** The database and the key of secrets (`vars`). */
const VARS_ENV: EnvName[] = [...STORE_ENV, "SECRETS_KEY", "SECRETS_KEY_PREVIOUS"];
/** The database and the file storage (a command that removes files' bytes). */
const STORAGE_ENV: EnvName[] = [
  ...STORE_ENV,
  "STORAGE",
  "S3_ENDPOINT",
  "S3_REGION",
  "S3_BUCKET",
  "S3_ACCESS_KEY",
  "S3_SECRET_KEY",
];

const serveFlags = (release: string): Record<string, Flag> => ({
  release: { type: "string", value: "<dir>", description: release },
  "insecure-no-auth": {
    type: "boolean",
    description: "/mcp without a credential (loopback only; for the MCP conformance suite)",
  },
});

const string = (value: unknown) => value as string | undefined;

const urlFlag = (what: string): Flag => ({ type: "string", value: "<url>", description: what });

const serve =
  ({ watch }: { watch: boolean }): Command["run"] =>
  (config, _, flags) =>
    serveCommand(config(), {
      watch,
      release: string(flags.release),
      insecureNoAuth: flags["insecure-no-auth"] === true,
    });

/** Every command of the CLI; `bun run <name> --help` prints one, `bun run <script>` alone lists a script's. */
export const commands: Command[] = [
  {
    name: "dev",
    summary: "serve a release folder with a development key, republishing it on every change",
    details: `Serves releases/<newest> (or --release <dir>), publishing it when it differs from what is stored.
A release published or activated from elsewhere (the CLI, another server) stays active until you edit
the folder; then dev publishes it again and says which release it replaces.
The development key is created once in DATA_DIR/dev-service-key (mode 0600) and added to SERVICE_KEYS.`,
    flags: serveFlags("the release folder to serve and watch (default: the newest folder under releases/)"),
    env: ENV_NAMES,
    examples: ["bun run dev", "bun run dev --release releases/v2", "PORT=4000 DATA_DIR=/tmp/actuate bun run dev"],
    run: serve({ watch: true }),
  },
  {
    name: "start",
    summary: "serve the active release; --release publishes a folder first",
    details: `Without --release nothing is published: the server serves the database's active release and
switches when another is activated (bun run release publish|activate). With --release <dir> the folder is
published and activated first, and every server on the same database switches to it.`,
    flags: serveFlags("publish and activate this release folder first (every server on the database follows)"),
    env: ENV_NAMES,
    examples: [
      "KEY=$(bun run key create) && DATABASE_URL=postgres://actuate:secret@db/actuate SERVICE_KEYS=$KEY bun run start",
      "bun run start --release releases/v2",
    ],
    run: serve({ watch: false }),
  },
  {
    name: "release publish",
    args: ["<dir>"],
    summary: "build a release folder, store it and make it the active release",
    details: `The version is --version, else release.ts's version, else the folder's name; a version already
stored with other content is refused. Every server on the database switches to it within RELEASE_POLL_MS.
The release records who published it: --by, else ACTUATE_PUBLISHED_BY, else your OS user@host (a label
shown in its history, not checked).
With --url the folder is built here and uploaded to the environment (POST /releases) with the service key
in ACTUATE_TOKEN; the environment checks it as a local publish does and answers the same changes.`,
    flags: {
      version: { type: "string", value: "<v>", description: "publish under this version" },
      by: { type: "string", value: "<name>", description: "who publishes, as the history shows it" },
      force: { type: "boolean", description: "publish even if the schema change orphans stored data" },
      url: urlFlag("upload to this environment instead of writing to the database (ACTUATE_TOKEN: a service key)"),
    },
    env: STORE_ENV,
    examples: [
      "bun run release publish releases/v2",
      "bun run release publish releases/v2 --version 2.0.1",
      "ACTUATE_TOKEN=$KEY bun run release publish releases/v2 --url https://api.example.com",
    ],
    run: (config, [dir], flags) =>
      releasePublish(config, dir as string, {
        version: string(flags.version),
        force: flags.force === true,
        by: string(flags.by),
        url: string(flags.url),
      }),
  },
  {
    name: "release list",
    summary: "the stored releases, oldest first; * marks the active one",
    flags: { url: urlFlag("list an environment's releases (GET /releases) with ACTUATE_TOKEN: a service key") },
    env: STORE_ENV,
    examples: ["bun run release list", "ACTUATE_TOKEN=$KEY bun run release list --url https://api.example.com"],
    run: (config, _, flags) => releaseList(config, { url: string(flags.url) }),
  },
  {
    name: "release activate",
    args: ["<version>"],
    summary: "make a stored release the active one (also the rollback)",
    flags: { url: urlFlag("activate in this environment (POST /releases/{version}/activate) with ACTUATE_TOKEN") },
    env: STORE_ENV,
    examples: [
      "bun run release activate v1",
      "ACTUATE_TOKEN=$KEY bun run release activate v1 --url https://api.example.com",
    ],
    run: (config, [version], flags) => releaseActivate(config, version as string, { url: string(flags.url) }),
  },
  {
    name: "release promote",
    args: ["<from-env>", "<to-env>"],
    summary: "publish one environment's active release to another and activate it (hosting mode)",
    details: `The release <from-env> serves (its stored bundle, under its version) is published to <to-env> as
release publish would publish it: the same contract changes printed, the same refusals (a version <to-env>
holds with other content, a schema change that orphans its data without --force, its required variables
unset). The same version with the same content there is only activated.`,
    flags: {
      force: { type: "boolean", description: "publish even if the schema change orphans data stored in <to-env>" },
      by: { type: "string", value: "<name>", description: "who promotes, as the history shows it" },
    },
    env: STORE_ENV,
    examples: ["bun run release promote acme-pr-42 acme-prod"],
    run: (config, [from, to], flags) =>
      releasePromote(config, from as string, to as string, { force: flags.force === true, by: string(flags.by) }),
  },
  {
    name: "release types",
    args: ["[dir]"],
    summary: "write the Release type of actuate/client for a release folder, or for what an environment serves",
    details: `From a folder (default releases/v1) the release is built as publish builds it; with --url the
environment's GET /describe is read with ACTUATE_TOKEN (a user token's view leaves out service-only actions).
createClient<Release>() then types each action's input and output and each entity's attributes.`,
    flags: {
      out: { type: "string", value: "<file>", required: true, description: "the TypeScript file to write" },
      url: urlFlag("read the release an environment serves instead"),
    },
    env: ["DATA_DIR"],
    examples: [
      "bun run release types releases/v2 --out web/src/actuate.gen.ts",
      "ACTUATE_TOKEN=$KEY bun run release types --url https://api.example.com --out actuate.gen.ts",
    ],
    run: (config, [dir], flags) =>
      releaseTypesCommand(config, dir, { out: flags.out as string, url: string(flags.url) }),
  },
  {
    name: "token create",
    summary: "create a user token; it is printed once, alone on the last line",
    flags: { user: { type: "string", value: "<id>", required: true, description: "the user the token acts as" } },
    env: STORE_ENV,
    examples: ["bun run token create --user alice", "TOKEN=$(bun run token create --user alice)"],
    run: (config, _, flags) => tokenCreate(config(), flags.user as string),
  },
  {
    name: "token list",
    summary: "every user token: prefix, user, created, revoked",
    env: STORE_ENV,
    examples: ["bun run token list"],
    run: (config) => tokenList(config()),
  },
  {
    name: "token revoke",
    args: ["<token-prefix>"],
    summary: "revoke a user token by its first 14 characters (or the whole token)",
    env: STORE_ENV,
    examples: ["bun run token revoke act_u_AbCdEfGh"],
    run: (config, [prefix]) => tokenRevoke(config(), prefix as string),
  },
  {
    name: "user sessions",
    args: ["<id>"],
    summary: "the apps a user is signed in to (the built-in sign-in): id, app, signed in, last refresh, expiry",
    env: STORE_ENV,
    examples: ["bun run user sessions alice"],
    run: (config, [id]) => userSessions(config(), id as string),
  },
  {
    name: "user revoke-session",
    args: ["<sign-in>"],
    summary: "end one sign-in by the first 12 characters of its id (as user sessions shows it)",
    details: `The app's refresh tokens stop at once and its access tokens within TOKEN_RECHECK_MS (1 s) on every
server; the person signs in to it again to go on.`,
    env: STORE_ENV,
    examples: ["bun run user revoke-session V1StGXR8_Z5j"],
    run: (config, [id]) => userRevokeSession(config(), id as string),
  },
  {
    name: "user add",
    args: ["<id>"],
    summary: "add a person who signs in with a password; a generated password is printed once",
    details: `The password is stored as an argon2id hash. Without --password-stdin one is generated (128 random
bits) and printed alone on stdout; with it, the password is read from standard input (at least 12 characters).`,
    flags: { "password-stdin": { type: "boolean", description: "read the password from standard input" } },
    env: STORE_ENV,
    examples: ["bun run user add alice", 'printf %s "$PASSWORD" | bun run user add alice --password-stdin'],
    run: (config, [id], flags) => userAdd(config(), id as string, { passwordStdin: flags["password-stdin"] === true }),
  },
  {
    name: "user list",
    summary: "every user: id, created, disabled",
    env: STORE_ENV,
    examples: ["bun run user list"],
    run: (config) => userList(config()),
  },
  {
    name: "user disable",
    args: ["<id>"],
    summary: "disable a user: revoke every token it holds and end its sign-ins (says how many)",
    env: STORE_ENV,
    examples: ["bun run user disable alice"],
    run: (config, [id]) => userDisable(config(), id as string),
  },
  {
    name: "user enable",
    args: ["<id>"],
    summary: "let a disabled user sign in again (what disabling ended stays ended)",
    env: STORE_ENV,
    examples: ["bun run user enable alice"],
    run: (config, [id]) => userEnable(config(), id as string),
  },
  {
    name: "key create",
    summary: "print a new service key (full access) and how to give it to a server (SERVICE_KEYS)",
    details: `Without --org or --env the key is stored nowhere: an operator key, valid where it is in SERVICE_KEYS
(it creates organizations and is administrator in every environment). With --org the key is administrator in
every environment of that organization; with --env in that environment only (the key a CI job deploys with).
Those two are stored as their SHA-256 in the database (only DATABASE_URL/DATA_DIR are read then), listed by
bun run key list, revoked by bun run key revoke.`,
    flags: {
      org: { type: "string", value: "<org>", description: "a stored key of this organization" },
      env: { type: "string", value: "<environment>", description: "a stored key of this environment" },
    },
    env: STORE_ENV,
    examples: [
      "bun run key create",
      "KEY=$(bun run key create) && SERVICE_KEYS=$KEY bun run start",
      "bun run key create --org acme",
      "DEPLOY_KEY=$(bun run key create --env acme-prod)",
    ],
    run: (config, _, flags) => {
      const scope = { org: string(flags.org), env: string(flags.env) };
      return scope.org === undefined && scope.env === undefined ? keyCreate() : keyCreateStored(config(), scope);
    },
  },
  {
    name: "key list",
    summary: "the stored keys of organizations and environments: id, prefix, scope, created, last used, revoked",
    flags: {
      org: { type: "string", value: "<org>", description: "only this organization's keys" },
      env: { type: "string", value: "<environment>", description: "only this environment's keys" },
    },
    env: STORE_ENV,
    examples: ["bun run key list", "bun run key list --env acme-prod"],
    run: (config, _, flags) => keyList(config(), { org: string(flags.org), env: string(flags.env) }),
  },
  {
    name: "key revoke",
    args: ["<id|prefix>"],
    summary: "revoke a stored key by its id or its first 14 characters",
    env: STORE_ENV,
    examples: ["bun run key revoke act_e_AbCdEfGh"],
    run: (config, [given]) => keyRevoke(config(), given as string),
  },
  {
    name: "org create",
    args: ["<handle>"],
    summary: "create an organization (a hosting service's customer): its environments, keys and grants",
    details: "A handle is a DNS label: lowercase letters, digits and hyphens (not first or last), at most 63.",
    env: STORE_ENV,
    examples: ["bun run org create acme"],
    run: (config, [handle]) => orgCreate(config(), handle as string),
  },
  {
    name: "org list",
    summary: "every organization: handle, how many environments, created",
    env: STORE_ENV,
    examples: ["bun run org list"],
    run: (config) => orgList(config()),
  },
  {
    name: "env create",
    args: ["<handle>"],
    summary: "create an environment of an organization, served at <handle>.<service domain>",
    details: `A handle is a DNS label (lowercase letters, digits and hyphens, not first or last, at most 63),
unique across the service. The environment starts with no release: publish one with a key of it.`,
    flags: { org: { type: "string", value: "<org>", required: true, description: "the organization it belongs to" } },
    env: STORE_ENV,
    examples: ["bun run env create acme-prod --org acme"],
    run: (config, [handle], flags) => envCreate(config(), handle as string, flags.org as string),
  },
  {
    name: "env list",
    summary: "every environment (of one organization with --org): handle, organization, active release, created",
    flags: { org: { type: "string", value: "<org>", description: "only this organization's environments" } },
    env: STORE_ENV,
    examples: ["bun run env list", "bun run env list --org acme"],
    run: (config, _, flags) => envList(config(), string(flags.org)),
  },
  {
    name: "secrets rotate-key",
    summary: "re-seal every secret of every environment under a new SECRETS_KEY",
    details: `The new key is read from SECRETS_KEY_NEW, else from stdin (never from the command line); the secrets
open with SECRETS_KEY (unset: the development key in DATA_DIR/secrets-key) or a key of SECRETS_KEY_PREVIOUS.
Prints how many were re-sealed; then set SECRETS_KEY to the new key on every instance and restart them.
A secret set while it runs keeps its new value. Generate a key with: openssl rand -base64 32`,
    env: [...STORE_ENV, "SECRETS_KEY", "SECRETS_KEY_PREVIOUS"],
    examples: [
      "SECRETS_KEY_NEW=$(openssl rand -base64 32) bun run secrets rotate-key",
      "openssl rand -base64 32 | tee new.key | bun run secrets rotate-key",
    ],
    run: (config) => secretsRotateKey(config()),
  },
  {
    name: "env delete",
    args: ["<handle>"],
    summary: "delete an environment and everything in it; without --yes, say what that removes and exit 1",
    details: `Removes its executions, runs, logs, data, files (their records and bytes), releases, tokens, keys and
grants, a few thousand rows a statement (other environments' writes wait one statement at most), then the
environment.
Without --yes nothing is deleted: it prints what would be and exits 1, so a script that forgot --yes stops.`,
    flags: { yes: { type: "boolean", description: "delete it (without: only say what would be removed)" } },
    env: STORAGE_ENV,
    examples: ["bun run env delete acme-staging", "bun run env delete acme-staging --yes"],
    run: (config, [handle], flags) => envDelete(config(), handle as string, { yes: flags.yes === true }),
  },
  {
    name: "env fork",
    args: ["<source>", "<handle>"],
    summary: "make a preview environment: a copy of <source>'s release, history and variables, its data with --data",
    details: `The fork has the source's active release and release history and its plain variables; --secrets
copies its secrets too (refused without it when the release declares secrets), --data its entities, links
and files (the files' bytes are shared until one side changes them). Executions, runs, logs, tokens, keys
and grants are not copied; its schedules start paused (env schedules <handle> --resume). --ttl deletes it
when that time has passed (30m, 12h, 7d; at most 90d). It is served at once, with keys of its own.`,
    flags: {
      data: { type: "boolean", description: "copy the entities, links and files" },
      secrets: { type: "boolean", description: "copy the secret variables too" },
      ttl: { type: "string", value: "<30m|12h|7d>", description: "delete the fork after this long (at most 90d)" },
      org: { type: "string", value: "<org>", description: "the fork's organization (default: the source's)" },
    },
    env: STORE_ENV,
    examples: ["bun run env fork acme-prod acme-pr-42 --data --ttl 7d", "bun run env fork acme-prod acme-try"],
    run: (config, [source, handle], flags) =>
      envFork(config(), source as string, handle as string, {
        data: flags.data === true,
        secrets: flags.secrets === true,
        ttl: string(flags.ttl),
        org: string(flags.org),
      }),
  },
  {
    name: "env schedules",
    args: ["<handle>"],
    summary: "pause or resume an environment's schedules (a fork's start paused)",
    details: `Paused, none of its release's schedules ticks. Resumed, its next tick is due at once: missed ticks
follow each schedule's catchUp, as after downtime (at most 24 h back).`,
    flags: {
      pause: { type: "boolean", description: "stop its schedules from ticking" },
      resume: { type: "boolean", description: "let them tick again" },
    },
    env: STORE_ENV,
    examples: ["bun run env schedules acme-pr-42 --resume", "bun run env schedules acme-prod --pause"],
    run: (config, [handle], flags) =>
      envSchedules(config(), handle as string, { pause: flags.pause === true, resume: flags.resume === true }),
  },
  {
    name: "env grant",
    args: ["[environment]", "<user>"],
    summary: "let a person use an environment, or with --org every environment of an organization",
    details: "An organization's grant covers its environments made later too.",
    flags: { org: { type: "string", value: "<org>", description: "grant every environment of this organization" } },
    env: STORE_ENV,
    examples: ["bun run env grant acme-prod alice", "bun run env grant --org acme alice"],
    run: (config, args, flags) => envGrant(config(), args, string(flags.org)),
  },
  {
    name: "env revoke",
    args: ["[environment]", "<user>"],
    summary: "take a grant away; the person's tokens end where no other grant lets them in (exit 1: no such grant)",
    flags: { org: { type: "string", value: "<org>", description: "the organization-wide grant" } },
    env: STORE_ENV,
    examples: ["bun run env revoke acme-prod alice", "bun run env revoke --org acme alice"],
    run: (config, args, flags) => envRevoke(config(), args, string(flags.org)),
  },
  {
    name: "env grants",
    args: ["[environment]"],
    summary: "who may use which environments: user, organization, environment (* every one), granted",
    flags: { org: { type: "string", value: "<org>", description: "only this organization's grants" } },
    env: STORE_ENV,
    examples: ["bun run env grants", "bun run env grants acme-prod", "bun run env grants --org acme"],
    run: (config, [environment], flags) => envGrants(config(), environment, string(flags.org)),
  },
  // Variables and secrets (issue #44): `vars set|list|unset`.
  {
    name: "vars set",
    args: ["[environment]", "<NAME>"],
    tooManyArguments: `the value is read from standard input, never from the command line (shell history, ps): pipe it, e.g. printf %s "$VALUE" | ${commandLine("vars set NAME")}`,
    summary: "set a variable (--secret: a secret, stored encrypted, never shown) from standard input",
    details: `The value is all of standard input, one trailing newline trimmed; never an argument. A secret is
stored encrypted with SECRETS_KEY and no command, page or API shows it again; it is at least 8 characters.
In single mode the environment is left out; in hosting mode it is named (its handle).
Every server uses the new value from its next invocation (within RELEASE_POLL_MS), without republishing.
With --url the environment's API is used with ACTUATE_TOKEN (a service key): its host (/variables), or the
service's apex with the environment named (/environments/<environment>/variables).`,
    flags: {
      secret: {
        type: "boolean",
        description: "store it as a secret: encrypted, write-only, redacted from logs and outputs",
      },
      url: urlFlag("set it over HTTP (PUT /variables/NAME) with ACTUATE_TOKEN instead of writing to the database"),
    },
    env: VARS_ENV,
    examples: [
      'printf %s "$STRIPE_KEY" | bun run vars set acme-prod STRIPE_KEY --secret',
      "echo eu | bun run vars set REGION",
      'printf %s "$V" | ACTUATE_TOKEN=$KEY bun run vars set REGION --url https://api.example.com',
    ],
    run: (config, args, flags) => varsSet(config, args, { secret: flags.secret === true, url: string(flags.url) }),
  },
  {
    name: "vars list",
    args: ["[environment]"],
    summary: "the variables set or declared: name, secret, value (plain ones only), updated, by, state",
    details: `STATE says what the active release makes of it: required (declared without a default), declared,
undeclared (set before any release declares it), or MISSING (required and unset: publishing is refused).`,
    flags: { url: urlFlag("list them over HTTP (GET /variables) with ACTUATE_TOKEN") },
    env: VARS_ENV,
    examples: ["bun run vars list", "bun run vars list acme-prod"],
    run: (config, args, flags) => varsList(config, args, { url: string(flags.url) }),
  },
  {
    name: "vars unset",
    args: ["[environment]", "<NAME>"],
    summary: "remove a variable (a declared default applies again; exit 1: no such variable)",
    flags: { url: urlFlag("unset it over HTTP (DELETE /variables/NAME) with ACTUATE_TOKEN") },
    env: VARS_ENV,
    examples: ["bun run vars unset REGION", "bun run vars unset acme-prod STRIPE_KEY"],
    run: (config, args, flags) => varsUnset(config, args, { url: string(flags.url) }),
  },
  {
    name: "instances",
    summary: "the live server processes on the database: id, host, pid, version, started, last heartbeat, expires",
    details: `Read from the database's instances table (PostgreSQL: each server's heartbeat row; a killed one stays
listed until its heartbeat expires, WORKFLOW_LEASE_MS after its last beat). With --url a server answers it
(GET /instances, ACTUATE_TOKEN a service key; in hosting mode the service's URL and an operator key); * marks
the instance that answered.`,
    flags: { url: urlFlag("ask this server (GET /instances) with ACTUATE_TOKEN instead of reading the database") },
    env: STORE_ENV,
    examples: ["bun run instances", "ACTUATE_TOKEN=$KEY bun run instances --url https://api.example.com"],
    run: (config, _, flags) => instancesList(config, { url: string(flags.url) }),
  },
];
