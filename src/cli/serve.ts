import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, watch, writeFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { newSecret, SERVICE_KEY_PREFIX } from "../auth/tokens.ts";
import { type Config, environmentUrl } from "../config.ts";
import { loggable } from "../lib/database-errors.ts";
import { PublicError } from "../lib/errors.ts";
import { bundlesDir, type RunningServer, serverLog, startServer } from "../main.ts";
import type { Log } from "../observe/log.ts";
import { ReleaseError } from "../release/errors.ts";
import type { LoadedRelease } from "../release/load.ts";
import { type PublishResult, publishRelease } from "../release/publish.ts";
import { openConfiguredStore, refuseSecretsWithoutKey, secretsSealer } from "../startup.ts";
import { describeDatabase } from "../store/open.ts";
import type { ActiveRelease } from "../store/releases.ts";
import { commandLine } from "./invocation.ts";
import { followers, printPublish, publisher } from "./release.ts";
import { sampleCall } from "./sample-input.ts";

const RELEASES_DIR = "releases";

export async function serveCommand(
  config: Config,
  options: { watch: boolean; release?: string; insecureNoAuth: boolean },
): Promise<number> {
  const devKey = options.watch ? ensureDevServiceKey(config.dataDir) : null;
  const serving = { ...config, serviceKeys: devKey ? [...config.serviceKeys, devKey] : config.serviceKeys };
  const store = await openConfiguredStore(config);
  // dev is read by people: readable lines unless LOG_FORMAT says otherwise.
  const log = serverLog(
    { ...config, log: { ...config.log, format: config.log.format ?? (options.watch ? "pretty" : "json") } },
    store.instances.id,
  );
  // dev serves a folder (the newest under releases/ by default); start publishes only when told to.
  const dir = options.release ?? (options.watch ? newestReleaseFolder() : undefined);
  const publish = async () => {
    if (!dir) return;
    const result = await publishRelease({
      store,
      bundlesDir: bundlesDir(config),
      dir,
      whenTaken: "suffix",
      publishedBy: publisher(),
      shouldActivate: options.watch ? (active, candidate) => devMayActivate(dir, active, candidate) : undefined,
    });
    if (options.watch) printDevPublish(dir, result);
    else if (result.active.version !== result.version) {
      printPublish(result);
      console.log(followers(config));
    }
  };
  const sealer = await secretsSealer(config, { keyFile: options.watch });
  // start: secrets stored and no key to open them would be a server whose handlers miss them.
  if (!options.watch) await refuseSecretsWithoutKey(store, sealer);
  try {
    await publish();
  } catch (error) {
    // dev keeps serving the last release while variables are missing; start refuses to start.
    if (!(options.watch && isVariablesMissing(error))) throw error;
    printVariablesMissing(log, dir, error);
  }

  const server = await startServer(serving, {
    sealer,
    store,
    log,
    insecureNoAuth: options.insecureNoAuth,
    development: options.watch,
  });
  const release = server.releases?.current();
  const database = describeDatabase(config.databaseUrl);
  log(`actuate serving ${server.url}  (release ${release?.version ?? "none"}, database ${database})`, {
    url: server.url,
    release: release?.version ?? null,
  });
  if (server.releases && !release) {
    log(
      `no release is active: publish one with ${commandLine("release publish <dir>")} (every server on this database follows), or start with --release <dir>`,
      { level: "warn" },
    );
  }
  if (devKey) printDevHelp(server, devKey, config);
  if (options.watch) printSchedules(server.releases?.current() ?? null);

  if (options.watch && dir) {
    watchFolder(dir, async () => {
      try {
        await publish();
        await server.releases?.refresh();
        printSchedules(server.releases?.current() ?? null);
      } catch (error) {
        if (isVariablesMissing(error)) return printVariablesMissing(log, dir, error);
        // A release's own mistake is the developer's to read; anything else may be a failed statement with its parameters.
        const why = error instanceof ReleaseError ? error.message : loggable(error);
        log(`release ${dir} not republished: ${why}`, { level: "error" });
      }
    });
    log(`watching ${shown(dir)} for changes`);
  }

  stopOnSignals(server, log, options.watch ? 0 : config.drainReadyMs, () => store.close());
  return -1; // keep serving
}

/**
 * SIGTERM or SIGINT stops the server, after the ready drain (`start`; `dev` stops at once), and exits 0.
 * Another signal meanwhile cuts the waits left short (the ready drain, DRAIN_MS), as operators expect.
 */
function stopOnSignals(server: RunningServer, log: Log, readyDrainMs: number, close: () => Promise<void>) {
  const hurry = new AbortController();
  let stopping = false;
  const onSignal = async (signal: NodeJS.Signals) => {
    if (stopping) {
      log(`${signal} again: stopping without waiting any longer`);
      hurry.abort();
      return;
    }
    stopping = true;
    if (readyDrainMs > 0) {
      log(`${signal}: draining (/readyz answers 503) for ${readyDrainMs} ms; ${signal} again skips the wait`);
    }
    await server.stop({ readyDrainMs, hurry: hurry.signal });
    await close();
    process.exit(0);
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
}

const isVariablesMissing = (error: unknown): error is PublicError =>
  error instanceof PublicError && error.code === "variables_missing";

/** dev: the release waits for its variables; the one served before goes on being served. */
function printVariablesMissing(log: Log, dir: string | undefined, error: PublicError) {
  const missing = (error.fields.missing as string[] | undefined) ?? [];
  log(`release ${dir ? shown(dir) : ""} not made live: variables missing: ${missing.join(", ")}`, {
    level: "warn",
    missing,
  });
  console.log(`${error.message}\nthen save a file of ${dir ? shown(dir) : "the release"} to publish it again`);
}

type Candidate = { base: string; version: string; stored: boolean };

/**
 * dev replaces the active release when it is its folder's own (the folder's version, or one of its
 * `+hash` republishes) or nothing is active. A release activated from elsewhere (the CLI, another server)
 * is replaced only by content never published before, from a folder edited after that activation: a
 * `git checkout` that restores a file, or a restart, does not bring an older release back.
 */
function devMayActivate(dir: string, active: ActiveRelease, candidate: Candidate): boolean {
  if (active.version === null || isFolderVersion(active.version, candidate.base)) return true;
  return !candidate.stored && lastChange(dir) > (active.activatedAt ?? 0);
}

const isFolderVersion = (version: string, base: string) => version === base || version.startsWith(`${base}+`);

function printDevPublish(dir: string, result: PublishResult) {
  const folder = shown(dir);
  const { active } = result;
  if (!result.activated) {
    console.log(
      `serving ${active.version}, activated from elsewhere after ${folder} last changed; ${folder} is stored as ${result.version} and goes live again when you edit it (or: ${commandLine(`release activate ${result.version}`)})`,
    );
    return;
  }
  if (active.version === result.version) return;
  if (active.version !== null && !isFolderVersion(active.version, result.base)) {
    console.log(
      `${folder} changed after ${active.version} was activated from elsewhere; it replaces ${active.version}:`,
    );
  }
  printPublish(result);
}

/** A folder as the developer knows it: relative to where they are, unless it is elsewhere. */
function shown(dir: string): string {
  const fromHere = relative(process.cwd(), resolve(dir));
  return fromHere.startsWith("..") ? resolve(dir) : fromHere || ".";
}

/** When a file of the folder last changed (ms). */
function lastChange(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) newest = Math.max(newest, statSync(join(entry.parentPath, entry.name)).mtimeMs);
  }
  return newest;
}

function newestReleaseFolder(): string | undefined {
  if (!existsSync(RELEASES_DIR)) return undefined;
  const folders = readdirSync(RELEASES_DIR).filter((name) => statSync(join(RELEASES_DIR, name)).isDirectory());
  folders.sort((a, b) => a.localeCompare(b, "en", { numeric: true }));
  const newest = folders.at(-1);
  return newest ? join(RELEASES_DIR, newest) : undefined;
}

/** A development key, created once and kept (mode 0600) under DATA_DIR so restarts keep working curls. */
function ensureDevServiceKey(dataDir: string): string {
  const path = join(dataDir, "dev-service-key");
  if (existsSync(path)) return readFileSync(path, "utf8").trim();
  mkdirSync(dataDir, { recursive: true });
  const key = newSecret(SERVICE_KEY_PREFIX);
  writeFileSync(path, `${key}\n`, { mode: 0o600 });
  chmodSync(path, 0o600);
  return key;
}

function printDevHelp(server: RunningServer, key: string, { dataDir, hosting, handle }: Config) {
  const release = server.releases?.current();
  // Hosting mode: environment 1 is reached at its own host; the bound address names none (404).
  const url = hosting ? environmentUrl(hosting.service, handle) : server.url;
  console.log(
    `\ndevelopment service key (kept in ${join(relative(process.cwd(), dataDir) || ".", "dev-service-key")}):\n  ${key}`,
  );
  if (!release) return;
  const sample = sampleCall(release.actions.values());
  if (!sample) {
    console.log("\nno action of this release can be tried with a made-up input; see GET /actions/{name}/contract\n");
    return;
  }
  // Quoted for the shell: the body goes between single quotes.
  const body = JSON.stringify({ requestId: crypto.randomUUID(), input: sample.input }).replaceAll("'", "'\\''");
  console.log(`\ntry it:\n  curl -s ${url}/actions/${sample.action}/invoke \\
    -H "Authorization: Bearer ${key}" -H "Content-Type: application/json" \\
    -d '${body}'\n`);
}

/** dev: each schedule of the release served and when it ticks next. */
export function printSchedules(release: LoadedRelease | null, now = Date.now()): void {
  const schedules = [...(release?.schedules.values() ?? [])];
  if (schedules.length === 0) return;
  console.log("schedules (each tick runs once, as the service principal schedule:<name>):");
  for (const s of schedules) {
    const clock = s.cron !== null ? `cron "${s.cron}" ${s.timezone}` : `every ${s.every}`;
    const next = s.nextAfter(now);
    console.log(
      `  ${s.name.padEnd(24)} ${s.action.padEnd(28)} ${clock}, next ${next === null ? "never" : new Date(next).toISOString()}`,
    );
  }
}

function watchFolder(dir: string, onChange: () => Promise<void>) {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let running = Promise.resolve();
  watch(dir, { recursive: true }, () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      running = running.then(onChange);
    }, 100);
  });
}
