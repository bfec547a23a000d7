import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, watch, writeFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { newSecret, SERVICE_KEY_PREFIX } from "../auth/tokens.ts";
import type { Config } from "../config.ts";
import { bundlesDir, type RunningServer, startServer } from "../main.ts";
import { publishRelease } from "../release/publish.ts";
import { openStore } from "../store/open.ts";
import { printPublish } from "./release.ts";
import { sampleCall } from "./sample-input.ts";

const RELEASES_DIR = "releases";

export async function serveCommand(
  config: Config,
  options: { watch: boolean; release?: string; insecureNoAuth: boolean },
): Promise<number> {
  const devKey = options.watch ? ensureDevServiceKey(config.dataDir) : null;
  const serving = { ...config, serviceKeys: devKey ? [...config.serviceKeys, devKey] : config.serviceKeys };
  const store = await openStore(config.databaseUrl);
  const dir = options.release ?? newestReleaseFolder();
  const publish = async () => {
    if (!dir) return;
    const result = await publishRelease({ store, bundlesDir: bundlesDir(config), dir, whenTaken: "suffix" });
    if (result.status === "published" || result.previousVersion !== result.version) printPublish(result);
  };
  await publish();

  const server = await startServer(serving, { store, insecureNoAuth: options.insecureNoAuth });
  const release = server.releases.current();
  console.log(
    `actuate serving ${server.url}  (release ${release?.version ?? "none"}, database ${describeDb(config.databaseUrl)})`,
  );
  if (devKey) printDevHelp(server, devKey, config.dataDir);

  if (options.watch && dir) {
    watchFolder(dir, async () => {
      try {
        await publish();
        await server.releases.refresh();
      } catch (error) {
        console.error(`release ${dir} not republished: ${(error as Error).message}`);
      }
    });
    console.log(`watching ${relative(process.cwd(), resolve(dir)) || "."} for changes`);
  }

  const shutdown = async () => {
    await server.stop();
    await store.close();
    process.exit(0);
  };
  process.once("SIGINT", shutdown);
  process.once("SIGTERM", shutdown);
  return -1; // keep serving
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

function printDevHelp(server: RunningServer, key: string, dataDir: string) {
  const release = server.releases.current();
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
  console.log(`\ntry it:\n  curl -s ${server.url}/actions/${sample.action}/invoke \\
    -H "Authorization: Bearer ${key}" -H "Content-Type: application/json" \\
    -d '${body}'\n`);
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

function describeDb(url: string): string {
  return url.startsWith("postgres") ? url.replace(/\/\/[^@/]*@/, "//***@") : url;
}
