import { join, resolve } from "node:path";
import { type Static, Type } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";

const Env = Type.Object({
  PORT: Type.Integer({ minimum: 0, maximum: 65535 }),
  HOST: Type.String({ minLength: 1 }),
  PUBLIC_URL: Type.Optional(Type.String({ pattern: "^https?://[^\\s/]+(/[^\\s]*)?$" })),
  HANDLE: Type.Optional(Type.String({ pattern: "^[a-z0-9][a-z0-9-]*$" })),
  DATA_DIR: Type.String({ minLength: 1 }),
  DATABASE_URL: Type.Optional(Type.String({ pattern: "^(postgres(ql)?://|sqlite:|file:).+" })),
  SERVICE_KEYS: Type.Optional(Type.String()),
  WAIT_MS: Type.Integer({ minimum: 1, maximum: 3_600_000 }),
  RELEASE_POLL_MS: Type.Integer({ minimum: 10, maximum: 60_000 }),
  CORS_ORIGINS: Type.Optional(Type.String()),
  /** The older name of CORS_ORIGINS, read when that is unset. */
  ALLOWED_ORIGINS: Type.Optional(Type.String()),
  MAX_FILE_BYTES: Type.Integer({ minimum: 1 }),
  SIGNING_SECRET: Type.Optional(Type.String({ minLength: 32 })),
  AUTH_ISSUER: Type.Optional(Type.String({ pattern: "^https?://\\S+$" })),
  STORAGE: Type.Union([Type.Literal("disk"), Type.Literal("s3")]),
  S3_ENDPOINT: Type.Optional(Type.String({ pattern: "^https?://[^\\s/]+/?$" })),
  S3_REGION: Type.String({ minLength: 1 }),
  S3_BUCKET: Type.Optional(Type.String({ pattern: "^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$" })),
  S3_ACCESS_KEY: Type.Optional(Type.String()),
  S3_SECRET_KEY: Type.Optional(Type.String()),
  WORKFLOW_CONCURRENCY: Type.Integer({ minimum: 1, maximum: 10_000 }),
  WORKFLOW_LEASE_MS: Type.Integer({ minimum: 300, maximum: 3_600_000 }),
  WORKFLOW_POLL_MS: Type.Integer({ minimum: 10, maximum: 60_000 }),
});

/** Where file bytes live: a folder, or an S3 bucket. */
export type StorageConfig =
  | { driver: "disk"; root: string }
  | { driver: "s3"; endPoint: string; region: string; bucket: string; accessKey: string; secretKey: string };

const S3_REQUIRED = ["S3_ENDPOINT", "S3_BUCKET", "S3_ACCESS_KEY", "S3_SECRET_KEY"] as const;

export interface Config {
  port: number;
  host: string;
  /** Base URL used in statusUrl and auth metadata, no trailing slash; derived from the bound address when unset. */
  publicUrl?: string;
  handle: string;
  dataDir: string;
  /** `sqlite:<path>` or `postgres://…`. */
  databaseUrl: string;
  serviceKeys: string[];
  waitMs: number;
  releasePollMs: number;
  /** Browser origins allowed to call the API (CORS) and /mcp. */
  cors: CorsOrigins;
  maxFileBytes: number;
  /** HMAC key of signed storage URLs; kept under DATA_DIR when unset. */
  signingSecret?: string;
  /** OAuth authorization server named in the protected-resource metadata, when there is one. */
  authIssuer?: string;
  storage: StorageConfig;
  workflows: { concurrency: number; leaseMs: number; pollMs: number };
}

/** `CORS_ORIGINS`: the origins it lists, and whether it holds `*` (any origin, except on /mcp). */
export interface CorsOrigins {
  listed: string[];
  any: boolean;
}

export class ConfigError extends Error {
  override name = "ConfigError";
}

const defaults = {
  PORT: "3000",
  HOST: "127.0.0.1",
  DATA_DIR: ".data",
  WAIT_MS: "110000",
  RELEASE_POLL_MS: "500",
  MAX_FILE_BYTES: String(100 * 1024 * 1024),
  STORAGE: "disk",
  S3_REGION: "us-east-1",
  WORKFLOW_CONCURRENCY: "16",
  WORKFLOW_LEASE_MS: "30000",
  WORKFLOW_POLL_MS: "1000",
};

/** Reads and validates the process environment once; a bad value throws a ConfigError naming it. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const raw: Record<string, unknown> = {};
  for (const key of Object.keys(Env.properties)) {
    const value = env[key] === "" ? undefined : (env[key] ?? defaults[key as keyof typeof defaults]);
    if (value !== undefined) raw[key] = value;
  }
  const converted = Value.Convert(Env, raw) as Record<string, unknown>;
  const problems = [...Value.Errors(Env, converted)];
  if (problems.length > 0) {
    const lines = problems.map((p) => {
      const name = p.path.slice(1);
      return `  ${name}=${JSON.stringify(env[name] ?? defaults[name as keyof typeof defaults])}: ${p.message}`;
    });
    throw new ConfigError(`invalid configuration:\n${lines.join("\n")}`);
  }
  const parsed = converted as Static<typeof Env>;
  const dataDir = resolve(parsed.DATA_DIR);
  return {
    port: parsed.PORT,
    host: parsed.HOST,
    publicUrl: parsed.PUBLIC_URL?.replace(/\/+$/, ""),
    handle: parsed.HANDLE ?? "local",
    dataDir,
    databaseUrl: parsed.DATABASE_URL ?? `sqlite:${join(dataDir, "actuate.db")}`,
    serviceKeys: list(parsed.SERVICE_KEYS),
    waitMs: parsed.WAIT_MS,
    releasePollMs: parsed.RELEASE_POLL_MS,
    cors:
      parsed.CORS_ORIGINS === undefined
        ? corsOrigins("ALLOWED_ORIGINS", parsed.ALLOWED_ORIGINS)
        : corsOrigins("CORS_ORIGINS", parsed.CORS_ORIGINS),
    authIssuer: parsed.AUTH_ISSUER,
    maxFileBytes: parsed.MAX_FILE_BYTES,
    signingSecret: parsed.SIGNING_SECRET,
    storage: storageConfig(parsed, dataDir),
    workflows: {
      concurrency: parsed.WORKFLOW_CONCURRENCY,
      leaseMs: parsed.WORKFLOW_LEASE_MS,
      pollMs: parsed.WORKFLOW_POLL_MS,
    },
  };
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

export const isLoopback = (host: string) => host === "localhost" || host === "::1" || /^127\.\d+\.\d+\.\d+$/.test(host);

/** The URL a client on this machine reaches a server bound to `host:port` at. */
export function localUrl(host: string, port: number): string {
  return `http://${hostForUrl(host)}:${port}`;
}

function hostForUrl(host: string): string {
  if (host === "0.0.0.0" || host === "::") return "127.0.0.1";
  return host.includes(":") ? `[${host}]` : host;
}
