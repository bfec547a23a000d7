import { join, resolve } from "node:path";
import { type Static, Type } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import { HANDLE } from "./lib/handles.ts";
import { isLoopbackHost } from "./lib/loopback.ts";

// Each variable once: its type, default and description (the CLI's --help text, see describeEnvironment).
const Env = Type.Object({
  PORT: Type.Integer({
    default: 3000,
    minimum: 0,
    maximum: 65535,
    description: "port to listen on (0: any free port)",
  }),
  HOST: Type.String({
    default: "127.0.0.1",
    minLength: 1,
    description: "address to listen on (0.0.0.0: every interface)",
  }),
  PUBLIC_URL: Type.Optional(
    Type.String({
      pattern: "^https?://[^\\s/]+(/[^\\s]*)?$",
      description: "the URL clients reach this server at (statusUrl, MCP metadata); unset: http://HOST:PORT",
    }),
  ),
  SERVICE_URL: Type.Optional(
    Type.String({
      description:
        "hosting mode: the service's URL (scheme, apex host, optional port), each environment served at <scheme>://<handle>.<apex>[:port]; unset: one environment (single mode)",
    }),
  ),
  TRUST_PROXY: Type.Boolean({
    default: false,
    description:
      "hosting mode: a request's host is its X-Forwarded-Host, not Host (only behind a proxy that sets it); URLs keep SERVICE_URL's scheme",
  }),
  SERVE_ENVIRONMENTS: Type.Optional(
    Type.String({
      description:
        "hosting mode: the environments this instance serves, comma-separated handle globs (acme-*) or org:<organization handle>, ! before one to exclude it (!org:acme); unset: all",
    }),
  ),
  HANDLE: Type.String({
    default: "local",
    pattern: "^[a-z0-9][a-z0-9-]*$",
    description: "this service's name in MCP resource URIs",
  }),
  MCP_TOOL_NAMES: Type.Union([Type.Literal("dotted"), Type.Literal("underscore")], {
    default: "dotted",
    description:
      "MCP tool names: dotted (<domain>.<action>) or underscore (<domain>_<action>, for LLM APIs that refuse dots); an action's mcp.name wins",
  }),
  DATA_DIR: Type.String({
    default: ".data",
    minLength: 1,
    description: "folder of the SQLite database, bundles, files on disk, the dev key and signing secret",
  }),
  DATABASE_URL: Type.Optional(
    Type.String({
      pattern: "^(postgres(ql)?://|sqlite:|file:).+",
      description:
        "postgres://user:pass@host/db or sqlite:<path> (?synchronous=full: an fsync per commit); unset: sqlite:DATA_DIR/actuate.db",
    }),
  ),
  SERVICE_KEYS: Type.Optional(
    Type.String({ description: "comma-separated keys with full access; make one with bun run key create" }),
  ),
  TOKEN_RECHECK_MS: Type.Integer({
    default: 1000,
    minimum: 0,
    maximum: 60_000,
    description:
      "how long a user token the store vouched for is taken without asking it again: a revocation takes effect within it (0: every request asks)",
  }),
  WAIT_MS: Type.Integer({
    default: 110_000,
    minimum: 1,
    maximum: 3_600_000,
    description: "how long an invoke waits for its result before answering 202",
  }),
  RELEASE_POLL_MS: Type.Integer({
    default: 500,
    minimum: 10,
    maximum: 60_000,
    description: "how often a server looks for a newly activated release",
  }),
  EXPIRY_SWEEP_MS: Type.Integer({
    default: 60_000,
    minimum: 100,
    maximum: 3_600_000,
    description:
      "hosting mode: how often the service looks for environments whose TTL passed (a fork's --ttl) and deletes them",
  }),
  DRAIN_READY_MS: Type.Integer({
    default: 5000,
    minimum: 0,
    maximum: 600_000,
    description:
      "start, on SIGTERM or SIGINT: how long /readyz answers 503 draining while every request is still served, so a load balancer takes the server out before it stops accepting (dev: 0)",
  }),
  DRAIN_MS: Type.Integer({
    default: 5000,
    minimum: 0,
    maximum: 600_000,
    description:
      "stopping: how long the requests in flight and their handlers may finish before the handlers' ctx.signal fires",
  }),
  FOLLOW_POLL_MS: Type.String({
    default: "25-1000",
    pattern: "^[1-9][0-9]{0,7}(-[1-9][0-9]{0,7})?$",
    description:
      "how long a follower of an execution waits before reading it again when nothing told it of a change (a missed notification): <first>-<longest> ms, doubling, or one value for both",
  }),
  CORS_ORIGINS: Type.Optional(
    Type.String({
      description: "comma-separated browser origins allowed to call the API and /mcp, or * (any; never /mcp)",
    }),
  ),
  ALLOWED_ORIGINS: Type.Optional(Type.String({ description: "the older name of CORS_ORIGINS, read when it is unset" })),
  MAX_FILE_BYTES: Type.Integer({
    default: 100 * 1024 * 1024,
    minimum: 1,
    description: "the largest file an upload may hold",
  }),
  MAX_MULTIPART_BYTES: Type.Integer({
    default: 256 * 1024 * 1024,
    minimum: 1,
    description: "the largest multipart invoke body: its request part and files together",
  }),
  MAX_RELEASE_BYTES: Type.Integer({
    default: 32 * 1024 * 1024,
    minimum: 1024,
    description: "the largest release upload (POST /releases: the built bundle, as JSON)",
  }),
  MAX_OUTPUT_BYTES: Type.Integer({
    default: 8 * 1024 * 1024,
    minimum: 1024,
    maximum: 256 * 1024 * 1024,
    description: "the largest output an action, workflow or step may return, as JSON; a larger one fails it",
  }),
  QUERY_MAX_ROWS: Type.Integer({
    default: 32_000,
    minimum: 1,
    description: "entities one query may answer (every level counted); a larger answer is refused",
  }),
  QUERY_MAX_BYTES: Type.Integer({
    default: 16 * 1024 * 1024,
    minimum: 1024,
    description: "bytes of entities (as stored) one query may answer; a larger answer is refused",
  }),
  SIGNING_SECRET: Type.Optional(
    Type.String({
      minLength: 32,
      description: "key of signed storage URLs, the same on every instance; unset: kept in DATA_DIR",
    }),
  ),
  SECRETS_KEY: Type.Optional(
    Type.String({
      pattern: "^\\s*([0-9a-fA-F]{64}|[A-Za-z0-9+/_-]{43}=?)\\s*$",
      description:
        "32-byte key (base64 or hex) sealing secrets at rest, the same on every instance; unset: dev keeps one in DATA_DIR, start stores no secret",
    }),
  ),
  SECRETS_KEY_PREVIOUS: Type.Optional(
    Type.String({
      description:
        "keys (comma-separated) secrets may still be sealed under during `actuate secrets rotate-key`; they are opened, never sealed with",
    }),
  ),
  AUTH_ISSUER: Type.Optional(
    Type.String({
      pattern: "^https?://\\S+$",
      description:
        "identity provider whose JWTs are accepted (and named in the MCP metadata); https, or http for a loopback host",
    }),
  ),
  AUTH_AUDIENCE: Type.Optional(
    Type.String({
      pattern: "^\\S+$",
      description:
        "the audience JWTs must name (it or it + /mcp); default PUBLIC_URL (single mode only: in hosting mode each environment's URL)",
    }),
  ),
  AUTH_USER_CLAIM: Type.String({ default: "sub", pattern: "^\\S+$", description: "the JWT claim that names the user" }),
  AUTH_JWKS_REFETCH_MS: Type.Integer({
    default: 30_000,
    minimum: 0,
    description: "a JWT with an unknown key id refetches the issuer's keys at most this often",
  }),
  AUTH_JWKS_URL: Type.Optional(
    Type.String({ pattern: "^https?://\\S+$", description: "the issuer's key set; default from its metadata" }),
  ),
  STORAGE: Type.Union([Type.Literal("disk"), Type.Literal("s3")], {
    default: "disk",
    description: "where file bytes live: disk (DATA_DIR/files) or s3",
  }),
  S3_ENDPOINT: Type.Optional(
    Type.String({ pattern: "^https?://[^\\s/]+/?$", description: "S3 or MinIO URL (STORAGE=s3)" }),
  ),
  S3_REGION: Type.String({ default: "us-east-1", minLength: 1, description: "S3 region (STORAGE=s3)" }),
  S3_BUCKET: Type.Optional(
    Type.String({
      pattern: "^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$",
      description: "bucket, created when missing (STORAGE=s3)",
    }),
  ),
  S3_ACCESS_KEY: Type.Optional(Type.String({ description: "S3 access key (STORAGE=s3)" })),
  S3_SECRET_KEY: Type.Optional(Type.String({ description: "S3 secret key (STORAGE=s3)" })),
  WORKFLOW_CONCURRENCY: Type.Integer({
    default: 16,
    minimum: 1,
    maximum: 10_000,
    description: "workflow runs one server runs at once",
  }),
  WORKFLOW_LEASE_MS: Type.Integer({
    default: 30_000,
    minimum: 300,
    maximum: 3_600_000,
    description: "how long a run stays with a server that stopped renewing it before another resumes it",
  }),
  WORKFLOW_POLL_MS: Type.Integer({
    default: 1000,
    minimum: 10,
    maximum: 60_000,
    description: "how often a server looks for queued or due workflow runs",
  }),
  EXECUTION_LOG_LINES: Type.Integer({
    default: 1000,
    minimum: 1,
    maximum: 1_000_000,
    description: "ctx.log lines one execution keeps; past them one 'truncated' line, then no more",
  }),
  EXECUTION_LOG_BYTES: Type.Integer({
    default: 256 * 1024,
    minimum: 1024,
    maximum: 1024 * 1024 * 1024,
    description: "bytes of ctx.log lines one execution keeps; past them one 'truncated' line, then no more",
  }),
  EXECUTION_RETENTION: Type.Optional(
    Type.String({
      pattern: "^[1-9][0-9]{0,6}(s|m|h|d)$",
      description:
        "forget executions this long after they ended (e.g. 30d; s, m, h, d), with their logs, uploads' records, runs " +
        "and idempotency keys; unset: kept for ever",
    }),
  ),
  LIVE_MAX_SUBSCRIPTIONS_PER_SOCKET: Type.Integer({
    default: 100,
    minimum: 1,
    description: "live queries one /session socket may hold (more are refused with status 429)",
  }),
  LIVE_MAX_SUBSCRIPTIONS_PER_CALLER: Type.Integer({
    default: 1000,
    minimum: 1,
    description: "live queries one caller may hold across its sockets on this server",
  }),
  LIVE_MAX_SOCKETS_PER_CALLER: Type.Integer({
    default: 50,
    minimum: 1,
    description: "/session sockets one caller may have signed in on this server",
  }),
  LIVE_REFRESH_BUDGET: Type.Integer({
    default: 100,
    minimum: 1,
    description: "live-query runs one write may trigger at once; past it, refreshes drop to LIVE_OVERLOAD_REFRESH_MS",
  }),
  LIVE_OVERLOAD_REFRESH_MS: Type.Integer({
    default: 1000,
    minimum: 10,
    maximum: 60_000,
    description: "while writes trigger more than LIVE_REFRESH_BUDGET runs, live queries are refreshed this often",
  }),
  LOG_LEVEL: Type.Union([Type.Literal("debug"), Type.Literal("info"), Type.Literal("warn"), Type.Literal("error")], {
    default: "info",
    description: "the least severe server log line written: debug (every request), info, warn or error",
  }),
  LOG_FORMAT: Type.Optional(
    Type.Union([Type.Literal("json"), Type.Literal("pretty")], {
      description:
        "server log lines as JSON objects, or pretty (readable, coloured on a terminal); unset: json, pretty for dev",
    }),
  ),
  METRICS_TOKEN: Type.Optional(
    Type.String({ minLength: 16, description: "a bearer token that may read GET /metrics (service keys may too)" }),
  ),
  OTEL_EXPORTER_OTLP_ENDPOINT: Type.Optional(
    Type.String({
      pattern: "^https?://\\S+$",
      description: "OpenTelemetry collector (OTLP/HTTP) that receives traces; unset: no tracing, nothing loaded",
    }),
  ),
  OTEL_SERVICE_NAME: Type.String({ default: "actuate", minLength: 1, description: "service.name of the traces sent" }),
});

export type EnvName = keyof typeof Env.properties;
export const ENV_NAMES = Object.keys(Env.properties) as EnvName[];

/** Where file bytes live: a folder, or an S3 bucket. */
export type StorageConfig =
  | { driver: "disk"; root: string }
  | { driver: "s3"; endPoint: string; region: string; bucket: string; accessKey: string; secretKey: string };

const S3_REQUIRED = ["S3_ENDPOINT", "S3_BUCKET", "S3_ACCESS_KEY", "S3_SECRET_KEY"] as const;

/** SERVICE_URL: where the service is, and so each environment (`<scheme>://<handle>.<apex>[:port]`). */
export interface ServiceUrl {
  scheme: "http" | "https";
  /** The apex host name, lower case, no trailing dot. */
  apex: string;
  /** The port as written in SERVICE_URL; null when it had none (the scheme's own). */
  port: number | null;
}

/** Hosting mode: many environments, each at its own host under the apex. */
export interface HostingConfig {
  service: ServiceUrl;
  /** SERVE_ENVIRONMENTS as written: handle globs and `org:<glob>`; null: every environment. */
  serve: string[] | null;
}

export interface Config {
  port: number;
  host: string;
  /** Base URL used in statusUrl and auth metadata, no trailing slash; derived from the bound address when unset. */
  publicUrl?: string;
  handle: string;
  /** SERVICE_URL is set: hosting mode; undefined: single mode (one environment, today's behaviour). */
  hosting?: HostingConfig;
  /** Whether X-Forwarded-Host/-Proto name the host and scheme a request was sent to (TRUST_PROXY). */
  trustProxy: boolean;
  /** How action tools are named over MCP: `notes.add`, or `notes_add` (an action's `mcp.name` wins either way). */
  mcpToolNames: "dotted" | "underscore";
  dataDir: string;
  /** `sqlite:<path>` or `postgres://…`. */
  databaseUrl: string;
  serviceKeys: string[];
  /** How long a user token the store vouched for is taken without asking it again (the revocation bound). */
  tokenRecheckMs: number;
  waitMs: number;
  releasePollMs: number;
  /** EXPIRY_SWEEP_MS: how often hosting mode deletes the environments whose TTL passed. */
  expirySweepMs: number;
  /** How long a signalled `start` answers /readyz 503 `draining` while still serving (DRAIN_READY_MS). */
  drainReadyMs: number;
  /** How long a stopping server lets requests and handlers finish before their ctx.signal fires (DRAIN_MS). */
  drainMs: number;
  /** FOLLOW_POLL_MS: a follower's backoff between reads of an execution nothing told it of (NOTIFY is the fast path). */
  followPoll: { minMs: number; maxMs: number };
  /** Browser origins allowed to call the API (CORS) and /mcp. */
  cors: CorsOrigins;
  maxFileBytes: number;
  /** The largest multipart invoke body, counted as it arrives (the files a request spools are bounded by it). */
  maxMultipartBytes: number;
  /** The largest `POST /releases` body, counted as it arrives. */
  maxReleaseBytes: number;
  /** The largest output an execution (or a step) may return, as JSON. */
  maxOutputBytes: number;
  /** How much one query (POST /query, the MCP tool, ctx.db.query, a live query) may answer. */
  queryLimits: { maxRows: number; maxBytes: number };
  /** HMAC key of signed storage URLs; kept under DATA_DIR when unset. */
  signingSecret?: string;
  /** SECRETS_KEY, and SECRETS_KEY_PREVIOUS's keys (opened during a rotation, never sealed with). */
  secretsKey?: { current: string; previous: string[] };
  /** The identity provider whose JWTs are accepted, named in the protected-resource metadata. */
  authIssuer?: string;
  /** How its JWTs are checked: audience (default the public URL), the user claim, where its keys are. */
  jwt: { audience?: string; userClaim: string; jwksUrl?: string; refetchMs: number };
  storage: StorageConfig;
  workflows: { concurrency: number; leaseMs: number; pollMs: number };
  /** How much of its log one execution keeps. */
  executionLogs: { lines: number; bytes: number };
  /** How long an ended execution is kept (EXECUTION_RETENTION); null: for ever. */
  executionRetentionMs: number | null;
  /** Bounds of live queries per socket and per caller, so one caller cannot load the server for all. */
  live: LiveLimits;
  /** Server log lines: the least severe written, and the format (unset: JSON, pretty for dev). */
  log: { level: "debug" | "info" | "warn" | "error"; format?: "json" | "pretty" };
  metricsToken?: string;
  /** Where traces go (OTLP/HTTP); tracing is off, and OpenTelemetry never loaded, without it. */
  otel?: { endpoint: string; serviceName: string };
}

export interface LiveLimits {
  subscriptionsPerSocket: number;
  subscriptionsPerCaller: number;
  socketsPerCaller: number;
  /** Query runs a refresh pass may make and still follow the next change at once. */
  refreshBudget: number;
  /** The pause after a pass over the budget: refreshes become periodic while the load lasts. */
  overloadRefreshMs: number;
}

/** `CORS_ORIGINS`: the origins it lists, and whether it holds `*` (any origin, except on /mcp). */
export interface CorsOrigins {
  listed: string[];
  any: boolean;
}

/** Settings whose value a refusal does not repeat: the keys of secrets. */
const HIDDEN_VALUES = new Set(["SECRETS_KEY", "SECRETS_KEY_PREVIOUS"]);

export class ConfigError extends Error {
  override name = "ConfigError";
}

/** Reads and validates the process environment once; a bad value throws a ConfigError naming it. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const raw: Record<string, unknown> = {};
  for (const key of ENV_NAMES) {
    // An empty variable is unset and takes no default either: a required one is reported missing.
    const value = env[key] === "" ? undefined : (env[key] ?? Env.properties[key].default);
    if (value !== undefined) raw[key] = value;
  }
  const converted = Value.Convert(Env, raw) as Record<string, unknown>;
  const problems = [...Value.Errors(Env, converted)];
  if (problems.length > 0) {
    const lines = problems.map((p) => {
      const name = p.path.slice(1);
      const shown = HIDDEN_VALUES.has(name) ? "(hidden)" : JSON.stringify(env[name] ?? defaultOf(name as EnvName));
      return `  ${name}=${shown}: ${p.message}`;
    });
    throw new ConfigError(`invalid configuration:\n${lines.join("\n")}`);
  }
  const parsed = converted as Static<typeof Env>;
  const dataDir = resolve(parsed.DATA_DIR);
  return {
    port: parsed.PORT,
    host: parsed.HOST,
    publicUrl: parsed.PUBLIC_URL?.replace(/\/+$/, ""),
    handle: parsed.HANDLE,
    hosting: hostingConfig(parsed),
    trustProxy: parsed.TRUST_PROXY,
    mcpToolNames: parsed.MCP_TOOL_NAMES,
    dataDir,
    databaseUrl: parsed.DATABASE_URL ?? `sqlite:${join(dataDir, "actuate.db")}`,
    serviceKeys: list(parsed.SERVICE_KEYS),
    tokenRecheckMs: parsed.TOKEN_RECHECK_MS,
    waitMs: parsed.WAIT_MS,
    releasePollMs: parsed.RELEASE_POLL_MS,
    expirySweepMs: parsed.EXPIRY_SWEEP_MS,
    drainReadyMs: parsed.DRAIN_READY_MS,
    drainMs: parsed.DRAIN_MS,
    followPoll: backoff("FOLLOW_POLL_MS", parsed.FOLLOW_POLL_MS),
    cors:
      parsed.CORS_ORIGINS === undefined
        ? corsOrigins("ALLOWED_ORIGINS", parsed.ALLOWED_ORIGINS)
        : corsOrigins("CORS_ORIGINS", parsed.CORS_ORIGINS),
    authIssuer: parsed.AUTH_ISSUER === undefined ? undefined : secureUrl("AUTH_ISSUER", parsed.AUTH_ISSUER),
    jwt: {
      audience: parsed.AUTH_AUDIENCE?.replace(/\/+$/, ""),
      userClaim: parsed.AUTH_USER_CLAIM,
      refetchMs: parsed.AUTH_JWKS_REFETCH_MS,
      jwksUrl: parsed.AUTH_JWKS_URL === undefined ? undefined : secureUrl("AUTH_JWKS_URL", parsed.AUTH_JWKS_URL),
    },
    maxFileBytes: parsed.MAX_FILE_BYTES,
    maxMultipartBytes: parsed.MAX_MULTIPART_BYTES,
    maxReleaseBytes: parsed.MAX_RELEASE_BYTES,
    maxOutputBytes: parsed.MAX_OUTPUT_BYTES,
    queryLimits: { maxRows: parsed.QUERY_MAX_ROWS, maxBytes: parsed.QUERY_MAX_BYTES },
    signingSecret: parsed.SIGNING_SECRET,
    secretsKey:
      parsed.SECRETS_KEY === undefined
        ? undefined
        : {
            current: parsed.SECRETS_KEY.trim(),
            previous: (parsed.SECRETS_KEY_PREVIOUS ?? "")
              .split(",")
              .map((key) => key.trim())
              .filter((key) => key !== ""),
          },
    storage: storageConfig(parsed, dataDir),
    workflows: {
      concurrency: parsed.WORKFLOW_CONCURRENCY,
      leaseMs: parsed.WORKFLOW_LEASE_MS,
      pollMs: parsed.WORKFLOW_POLL_MS,
    },
    executionLogs: { lines: parsed.EXECUTION_LOG_LINES, bytes: parsed.EXECUTION_LOG_BYTES },
    executionRetentionMs: parsed.EXECUTION_RETENTION === undefined ? null : durationMs(parsed.EXECUTION_RETENTION),
    live: {
      subscriptionsPerSocket: parsed.LIVE_MAX_SUBSCRIPTIONS_PER_SOCKET,
      subscriptionsPerCaller: parsed.LIVE_MAX_SUBSCRIPTIONS_PER_CALLER,
      socketsPerCaller: parsed.LIVE_MAX_SOCKETS_PER_CALLER,
      refreshBudget: parsed.LIVE_REFRESH_BUDGET,
      overloadRefreshMs: parsed.LIVE_OVERLOAD_REFRESH_MS,
    },
    log: { level: parsed.LOG_LEVEL, format: parsed.LOG_FORMAT },
    metricsToken: parsed.METRICS_TOKEN,
    otel:
      parsed.OTEL_EXPORTER_OTLP_ENDPOINT === undefined
        ? undefined
        : { endpoint: parsed.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, ""), serviceName: parsed.OTEL_SERVICE_NAME },
  };
}

function hostingConfig(parsed: Static<typeof Env>): HostingConfig | undefined {
  if (parsed.SERVICE_URL === undefined) {
    if (parsed.SERVE_ENVIRONMENTS !== undefined) refuse("SERVE_ENVIRONMENTS", "only with SERVICE_URL (hosting mode)");
    return undefined;
  }
  if (parsed.PUBLIC_URL !== undefined) {
    refuse("PUBLIC_URL", "not in hosting mode: each environment's URL comes from SERVICE_URL; unset one of them");
  }
  if (parsed.AUTH_AUDIENCE !== undefined) {
    // One audience for all would make a token of one environment good in every other (RFC 8707).
    refuse("AUTH_AUDIENCE", "not in hosting mode: each environment's tokens must name its own URL (or URL/mcp)");
  }
  return { service: serviceUrl(parsed.SERVICE_URL), serve: serveRules(parsed.SERVE_ENVIRONMENTS) };
}

function refuse(name: EnvName, why: string): never {
  throw new ConfigError(`invalid configuration:\n  ${name}: ${why}`);
}

// A host name: DNS labels (letters, digits, hyphens), at least one; IP addresses have no subdomains.
const APEX = /^(?!-)[a-z0-9-]{1,63}(?<!-)(\.(?!-)[a-z0-9-]{1,63}(?<!-))*$/;

/** SERVICE_URL: http or https, a host name and an optional port; nothing else (no path, query, credentials). */
export function serviceUrl(value: string): ServiceUrl {
  const url = URL.parse(value);
  const bad = (why: string) => refuse("SERVICE_URL", `${JSON.stringify(value)}: ${why}`);
  if (url === null || (url.protocol !== "http:" && url.protocol !== "https:"))
    return bad("an http or https URL is required");
  if (url.username || url.password) return bad("no credentials");
  if (url.pathname !== "/" || url.search || url.hash || /[?#]/.test(value)) return bad("no path, query or fragment");
  const apex = url.hostname.replace(/\.$/, "");
  if (!APEX.test(apex) || /^[\d.]+$/.test(apex))
    return bad("the host must be a name (environments are its subdomains)");
  return {
    scheme: url.protocol === "https:" ? "https" : "http",
    apex,
    port: url.port === "" ? null : Number(url.port),
  };
}

// `acme-*`, `*-staging`, `org:acme`, `!org:acme`: a handle's characters and `*` (any run of them).
const SERVE_RULE = /^!?(org:)?[a-z0-9*-]+$/;

function serveRules(value: string | undefined): string[] | null {
  const rules = list(value);
  if (rules.length === 0) return null;
  const bad = rules.filter((rule) => !SERVE_RULE.test(rule));
  if (bad.length > 0) {
    const named = bad.map((rule) => JSON.stringify(rule)).join(", ");
    refuse(
      "SERVE_ENVIRONMENTS",
      `${named}: a rule is a handle glob (acme-*) or org:<handle glob>, either after ! to exclude`,
    );
  }
  return rules;
}

/** `25-1000` (first and longest wait) or `60000` (both); the pattern above has already checked the form. */
function backoff(name: EnvName, text: string): { minMs: number; maxMs: number } {
  const [minMs, maxMs = minMs] = text.split("-").map(Number) as [number, number?];
  if (minMs > maxMs) refuse(name, `${JSON.stringify(text)}: the first wait is longer than the longest`);
  return { minMs, maxMs };
}

const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** `30d`, `12h`, `90m`, `45s` in milliseconds (the pattern above has already checked the form). */
export function durationMs(text: string): number {
  const unit = text.slice(-1) as keyof typeof UNIT_MS;
  return Number(text.slice(0, -1)) * UNIT_MS[unit];
}

/** The variables' help lines: name, default, what it sets; taken from the schema above so they cannot drift. */
export function describeEnvironment(names: readonly EnvName[]): string[] {
  const nameWidth = Math.max(...names.map((name) => name.length));
  const defaultWidth = Math.max(...names.map((name) => (defaultOf(name) ?? "-").length));
  return names.map(
    (name) =>
      `  ${name.padEnd(nameWidth)}  ${(defaultOf(name) ?? "-").padEnd(defaultWidth)}  ${Env.properties[name].description}`,
  );
}

/** A variable's default as it would be written in the environment; undefined when it has none. */
function defaultOf(name: EnvName): string | undefined {
  const value: unknown = Env.properties[name].default;
  return value === undefined ? undefined : String(value);
}

function storageConfig(parsed: Static<typeof Env>, dataDir: string): StorageConfig {
  if (parsed.STORAGE === "disk") return { driver: "disk", root: join(dataDir, "files") };
  const { S3_ENDPOINT: endPoint, S3_BUCKET: bucket, S3_ACCESS_KEY: accessKey, S3_SECRET_KEY: secretKey } = parsed;
  if (endPoint === undefined || bucket === undefined || accessKey === undefined || secretKey === undefined) {
    const lines = S3_REQUIRED.filter((name) => parsed[name] === undefined).map(
      (name) => `  ${name}: required when STORAGE=s3`,
    );
    throw new ConfigError(`invalid configuration:\n${lines.join("\n")}`);
  }
  return {
    driver: "s3",
    endPoint: endPoint.replace(/\/+$/, ""),
    region: parsed.S3_REGION,
    bucket,
    accessKey,
    secretKey,
  };
}

function corsOrigins(name: string, value: string | undefined): CorsOrigins {
  const entries = list(value);
  const listed = entries.filter((entry) => entry !== "*").map((entry) => entry.replace(/\/+$/, "").toLowerCase());
  const malformed = listed.filter((origin) => !ORIGIN.test(origin));
  if (malformed.length > 0) {
    const named = malformed.map((origin) => JSON.stringify(origin)).join(", ");
    throw new ConfigError(`invalid configuration:\n  ${name}: ${named}: an origin is scheme://host[:port], or *`);
  }
  return { listed, any: entries.includes("*") };
}

// What a browser sends in Origin: no path, query or credentials (schemes like tauri:// included).
const ORIGIN = /^[a-z][a-z0-9+.-]*:\/\/[^\s/?#@]+$/;

const list = (value: string | undefined) =>
  (value ?? "")
    .split(",")
    .map((item) => item.trim())
    .filter(Boolean);

/** The URL a client on this machine reaches a server bound to `host:port` at. */
export function localUrl(host: string, port: number): string {
  return `http://${hostForUrl(host)}:${port}`;
}

function hostForUrl(host: string): string {
  if (host === "0.0.0.0" || host === "::") return "127.0.0.1";
  return host.includes(":") ? `[${host}]` : host;
}

/** Keys and issuers are trusted over the network: https, or plain http only to this machine (tests, local providers). */
function secureUrl(name: string, value: string): string {
  const url = URL.parse(value);
  const loopback = url !== null && isLoopbackHost(url.hostname);
  if (url === null || (url.protocol !== "https:" && !(url.protocol === "http:" && loopback))) {
    throw new ConfigError(
      `invalid configuration:\n  ${name}: ${value}: https is required (http only for a loopback host)`,
    );
  }
  return value;
}

/** Which site a request's host names: the service itself (the apex), an environment by handle, or neither. */
export type HostTarget = { kind: "apex" } | { kind: "environment"; handle: string } | { kind: "outside" };

/** The apex itself, `<handle>.<apex>` (one label, a handle's form), or outside the service. */
export function hostTarget(host: string, service: ServiceUrl): HostTarget {
  if (host === service.apex) return { kind: "apex" };
  const suffix = `.${service.apex}`;
  if (!host.endsWith(suffix)) return { kind: "outside" };
  const handle = host.slice(0, -suffix.length);
  return HANDLE.test(handle) ? { kind: "environment", handle } : { kind: "outside" };
}

/** The service's own URL (the apex): `<scheme>://<apex>[:port]`, no trailing slash. */
export const serviceUrlOf = (service: ServiceUrl): string => siteUrl(service, service.apex);

/** An environment's public URL: `<scheme>://<handle>.<apex>[:port]`, no trailing slash. */
export const environmentUrl = (service: ServiceUrl, handle: string): string =>
  siteUrl(service, `${handle}.${service.apex}`);

const siteUrl = ({ scheme, port }: ServiceUrl, host: string) => `${scheme}://${host}${port === null ? "" : `:${port}`}`;
