import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { isAbsolute, join, relative, resolve } from "node:path";
import type { Config, EnvName } from "./config.ts";
import { DiskStorage } from "./files/disk.ts";
import type { Storage } from "./files/storage.ts";
import { isDatabaseUnavailable } from "./lib/database-errors.ts";
import { randomBase64url } from "./lib/ids.ts";
import { describeDatabase, openStore, sqliteUrlParts } from "./store/open.ts";
import type { Store } from "./store/store.ts";
import { createSealer, generateKey, type Sealer, SealingError } from "./variables/sealing.ts";

/**
 * Start-up stopped by what a setting points at, not by a bug: a database or a bucket that cannot be
 * reached, a DATA_DIR that cannot be written, a port taken. The CLI says it in one line naming the cause
 * and the setting to change (JSON with LOG_FORMAT=json): a stack of the bundled source helps no operator.
 */
export class StartupError extends Error {
  override name = "StartupError";
  constructor(
    message: string,
    readonly setting: EnvName,
  ) {
    super(message);
  }
}

/** Beside what a running server takes for an outage: a host that does not resolve, credentials or a database refused. */
const NEVER_CONNECTED = new Set(["ENOTFOUND", "EAI_AGAIN", "ENETUNREACH", "28P01", "28000", "3D000"]);
/** SQLite cannot open or write its file (bun:sqlite's codes). */
const SQLITE_REFUSED = new Set(["SQLITE_CANTOPEN", "SQLITE_READONLY", "SQLITE_PERM", "SQLITE_FULL"]);
/** The file system refused a write, or a folder on the way (EEXIST, ENOTDIR: a file stands there). */
const WRITE_REFUSED = new Set(["EACCES", "EPERM", "EROFS", "EEXIST", "ENOTDIR", "ENOSPC", "EDQUOT"]);
/** A request that got no answer from the other end. */
const UNREACHABLE = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
]);

const codeOf = (error: unknown) => String((error as { code?: unknown } | null)?.code ?? "");
const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** Opens the configured database; one that cannot be reached or written is a StartupError naming its setting. */
export async function openConfiguredStore(config: Config): Promise<Store> {
  try {
    return await openStore(config.databaseUrl);
  } catch (error) {
    throw databaseFailure(config, error) ?? error;
  }
}

function databaseFailure({ databaseUrl, dataDir }: Config, error: unknown): StartupError | null {
  const code = codeOf(error);
  if (databaseUrl.startsWith("postgres")) {
    if (!isDatabaseUnavailable(error) && !NEVER_CONNECTED.has(code)) return null;
    return new StartupError(
      `cannot connect to the database ${describeDatabase(databaseUrl)} (${messageOf(error)}): check DATABASE_URL`,
      "DATABASE_URL",
    );
  }
  if (!SQLITE_REFUSED.has(code) && !WRITE_REFUSED.has(code)) return null;
  const [file] = sqliteUrlParts(databaseUrl);
  // SQLite's messages do not name the file.
  const cause = SQLITE_REFUSED.has(code) ? `${messageOf(error)}: ${file}` : messageOf(error);
  if (isInside(dataDir, file)) return dataDirUnwritable(dataDir, cause);
  return new StartupError(
    `the SQLite database ${file} cannot be written (${cause}): check DATABASE_URL`,
    "DATABASE_URL",
  );
}

/** A file under DATA_DIR the file system would not let us write, as a StartupError; null for any other error. */
export function dataDirFailure(dataDir: string, error: unknown): StartupError | null {
  const path = (error as { path?: unknown } | null)?.path;
  if (!WRITE_REFUSED.has(codeOf(error)) || typeof path !== "string" || !isInside(dataDir, path)) return null;
  return dataDirUnwritable(dataDir, messageOf(error));
}

const dataDirUnwritable = (dataDir: string, cause: string) =>
  new StartupError(
    `DATA_DIR ${dataDir} cannot be written by this process (uid ${process.getuid?.() ?? "?"}): ${cause}; make it writable by that user, or set DATA_DIR`,
    "DATA_DIR",
  );

/** The HMAC key of signed storage URLs, created once (mode 0600) so URLs survive restarts. */
export function signingSecret(dataDir: string): string {
  const path = join(dataDir, "signing-secret");
  if (existsSync(path)) return readFileSync(path, "utf8").trim();
  mkdirSync(dataDir, { recursive: true });
  const secret = randomBase64url(32);
  writeFileSync(path, `${secret}\n`, { mode: 0o600 });
  return secret;
}

/**
 * What seals secrets: SECRETS_KEY (with SECRETS_KEY_PREVIOUS during a rotation); unset, a key kept in
 * DATA_DIR (`secrets-key`, mode 0600) when `keyFile` (dev, tests' servers), else none: `start` stores no
 * secret without a key the operator holds (a key beside the database protects nothing from its backups).
 */
export async function secretsSealer(config: Config, options: { keyFile: boolean }): Promise<Sealer | null> {
  try {
    if (config.secretsKey) return await createSealer(config.secretsKey.current, config.secretsKey.previous);
    if (!options.keyFile) return null;
    return await createSealer(secretsKeyFile(config.dataDir));
  } catch (error) {
    if (error instanceof SealingError) throw new StartupError(error.message, "SECRETS_KEY");
    throw error;
  }
}

/** The development key of secrets, created once (mode 0600) beside the signing secret. */
export function secretsKeyFile(dataDir: string): string {
  const path = join(dataDir, "secrets-key");
  if (existsSync(path)) return readFileSync(path, "utf8").trim();
  mkdirSync(dataDir, { recursive: true });
  const key = generateKey();
  writeFileSync(path, `${key}\n`, { mode: 0o600 });
  return key;
}

/**
 * `start` without SECRETS_KEY on a database that holds secrets: refused, since none of them would open.
 */
export async function refuseSecretsWithoutKey(store: Store, sealer: Sealer | null): Promise<void> {
  if (sealer) return;
  const [secret] = await store.variables.sealedUnder("", 1);
  if (secret) {
    throw new StartupError(
      "this database holds secrets and SECRETS_KEY is not set: set SECRETS_KEY to the key they were sealed with",
      "SECRETS_KEY",
    );
  }
}

/**
 * The configured file storage. A bucket is reached before anything starts running, so an unreachable one
 * stops start-up cleanly; the S3 driver (minio: ~20 MiB and ~150 ms to import) is loaded only when it is
 * the one configured.
 */
export async function openConfiguredStorage({ storage }: Config): Promise<Storage> {
  if (storage.driver === "disk") return new DiskStorage(storage.root);
  const { S3Storage } = await import("./files/s3.ts");
  try {
    return await S3Storage.open(storage);
  } catch (error) {
    throw storageFailure(storage.endPoint, error) ?? error;
  }
}

/** An S3 endpoint that cannot be reached, as a StartupError; null for any other error. */
function storageFailure(endpoint: string, error: unknown): StartupError | null {
  if (!UNREACHABLE.has(codeOf(error))) return null;
  return new StartupError(
    `the S3 endpoint ${endpoint} cannot be reached (${messageOf(error)}): check S3_ENDPOINT`,
    "S3_ENDPOINT",
  );
}

function isInside(dir: string, path: string): boolean {
  const fromDir = relative(dir, resolve(path));
  return !fromDir.startsWith("..") && !isAbsolute(fromDir);
}
