import { hostname, userInfo } from "node:os";
import type { Config } from "../config.ts";
import { promoteRelease } from "../engine/control/promote.ts";
import { PublicError } from "../lib/errors.ts";
import { bundlesDir } from "../main.ts";
import { activateRelease } from "../release/activate.ts";
import { type ReleaseDescription, releaseTypes } from "../release/client-types.ts";
import { ReleaseError } from "../release/errors.ts";
import { asRelease, loadBundle } from "../release/load.ts";
import { buildRelease, publishRelease } from "../release/publish.ts";
import { describeDatabase } from "../store/open.ts";
import type { Page, PublishAnswer, PublishedRelease } from "../wire/views.ts";
import { commandLine } from "./invocation.ts";
import { environmentNamed } from "./org.ts";
import { type Remote, remote } from "./remote.ts";
import { withStore } from "./with-store.ts";

/** Publishes into the database (or, with `url`, builds here and uploads to the environment: POST /releases). */
export const releasePublish = (
  config: () => Config,
  dir: string,
  flags: { version?: string; force?: boolean; by?: string; url?: string },
) => {
  if (flags.url) return remotePublish(remote(flags.url), dir, flags);
  return withStore(config(), async (store) => {
    const result = await publishRelease({
      store,
      bundlesDir: bundlesDir(config()),
      dir,
      version: flags.version,
      force: flags.force,
      whenTaken: "refuse",
      publishedBy: publisher(flags.by),
    });
    printPublish(result);
    console.log(followers(config()));
    return 0;
  });
};

async function remotePublish(
  environment: Remote,
  dir: string,
  flags: { version?: string; force?: boolean; by?: string },
): Promise<number> {
  const { code, defaultVersion } = await buildRelease(dir);
  const answer = await environment.request<PublishAnswer>("/releases", {
    method: "POST",
    body: {
      bundle: code,
      defaultVersion,
      version: flags.version,
      force: flags.force || undefined,
      publishedBy: publisher(flags.by),
    },
  });
  printPublish(answer);
  console.log(remoteFollowers(environment));
  return 0;
}

/**
 * Who a release is published by, as its history shows it: whoever runs the CLI says so (`--by`, or
 * ACTUATE_PUBLISHED_BY in CI), else the OS account and host. The CLI writes to the database directly, with
 * no principal to take it from: it is a label, as a commit's author is (sent with an upload too, so the
 * history reads the same however a release was published).
 */
export const publisher = (by?: string) =>
  by?.trim() || process.env.ACTUATE_PUBLISHED_BY?.trim() || `${osUser()}@${hostname()}`;

// userInfo throws for a uid with no account (containers run as arbitrary uids).
function osUser(): string {
  try {
    return userInfo().username;
  } catch {
    return process.env.USER || `uid ${process.getuid?.() ?? "?"}`;
  }
}

/** The stored releases, oldest first; from the database, or (`url`) from the environment's GET /releases. */
export const releaseList = async (config: () => Config, flags: { url?: string }) => {
  const releases = flags.url
    ? await remoteHistory(remote(flags.url))
    : await withStore(config(), async (store) => {
        const [rows, active] = await Promise.all([store.releases.list(), store.releases.active()]);
        return rows.map((r) => ({
          version: r.version,
          publishedAt: new Date(r.createdAt).toISOString(),
          bundleHash: r.bundleHash,
          publishedBy: r.publishedBy,
          active: r.version === active.version,
          actions: (r.manifest as { actions: unknown[] }).actions.length,
        }));
      });
  if (releases.length === 0) console.log("no releases published yet");
  for (const r of releases) {
    const actions = r.actions === undefined ? "" : `  ${r.actions} actions`;
    console.log(
      `${r.active ? "*" : " "} ${r.version.padEnd(24)} ${r.publishedAt}${actions}  ${r.bundleHash.slice(0, 12)}${r.publishedBy ? `  by ${r.publishedBy}` : ""}`,
    );
  }
  return 0;
};

/** Every page of GET /releases (newest first), oldest first as the local list. */
async function remoteHistory(environment: Remote): Promise<(PublishedRelease & { actions?: number })[]> {
  const items: PublishedRelease[] = [];
  let cursor: string | null = null;
  do {
    const query: string = cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`;
    const page: Page<PublishedRelease> = await environment.request(`/releases?limit=200${query}`);
    items.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor !== null);
  return items.reverse();
}

export const releaseActivate = async (config: () => Config, version: string, flags: { url?: string }) => {
  if (flags.url) {
    const environment = remote(flags.url);
    await environment.request(`/releases/${encodeURIComponent(version)}/activate`, { method: "POST" });
    console.log(`release ${version} is now active`);
    console.log(remoteFollowers(environment));
    return 0;
  }
  return withStore(config(), async (store) => {
    try {
      await activateRelease(store, version, Date.now());
    } catch (error) {
      if (error instanceof PublicError && error.code === "release_not_found") {
        throw new ReleaseError(`${error.message}; see ${commandLine("release list")}`);
      }
      throw error;
    }
    console.log(`release ${version} is now active`);
    console.log(followers(config()));
    return 0;
  });
};

export function printPublish(result: PublishAnswer): void {
  const verb = result.status === "published" ? "published" : "already stored; activated";
  const was = result.previous;
  console.log(`release ${result.version} ${verb}${was ? ` (was ${was})` : ""}`);
  for (const c of result.changes) {
    console.log(`  ${c.change.padEnd(9)} ${c.name.padEnd(32)} ${c.contractHash.slice(0, 16)}`);
  }
  for (const c of result.scheduleChanges) console.log(`  ${c.change.padEnd(9)} schedule ${c.name}`);
  if (result.changes.some((c) => c.change !== "unchanged")) {
    console.log(
      `contracts changed: clients typed with actuate/client want ${commandLine("release types --out <file>")} again`,
    );
  }
}

/** Who switches after an activation: every server polls its database's active release. */
export function followers(config: Config): string {
  return `every server on ${describeDatabase(config.databaseUrl)} switches to it within its RELEASE_POLL_MS (${config.releasePollMs} ms with this environment)`;
}

/** Who switches after a publish or activation over HTTP: the environment's servers poll its database. */
const remoteFollowers = (environment: Remote) =>
  `${environment.url} serves it now; every other server of that environment within its RELEASE_POLL_MS`;

/**
 * Writes the `Release` type of `actuate/client` for a release folder, or for what an environment
 * serves (`--url`, read through `GET /describe` with ACTUATE_TOKEN: a user token's view leaves out the
 * service-only actions).
 */
export async function releaseTypesCommand(
  config: () => Config,
  dir: string | undefined,
  flags: { out: string; url?: string },
): Promise<number> {
  let description: ReleaseDescription;
  let source: string;
  if (flags.url) {
    const environment = remote(flags.url);
    const described = await environment.request<{
      release: { version: string } | null;
      actions: ReleaseDescription["actions"];
      entities: ReleaseDescription["entities"];
      links: ReleaseDescription["links"];
    }>("/describe");
    if (!described.release) throw new ReleaseError(`${environment.url} has no active release`);
    const { actions, entities, links } = described;
    description = { version: described.release.version, actions, entities, links };
    source = environment.url;
  } else {
    const folder = dir ?? "releases/v1";
    const built = await buildRelease(folder);
    const loaded = await loadBundle(built, bundlesDir(config()));
    const version = loaded.declared?.version ?? built.defaultVersion;
    const { manifest } = asRelease(loaded, version);
    const { entities, links } = manifest.schema;
    description = { version, actions: manifest.actions, entities, links, env: manifest.env };
    source = folder;
  }
  await Bun.write(flags.out, releaseTypes(description, source));
  console.log(`wrote ${flags.out}: ${description.actions.length} actions of release ${description.version}`);
  return 0;
}

/**
 * Publishes one environment's active release to another (hosting mode): its stored bundle, checked and
 * diffed as `release publish` does, then activated.
 */
export const releasePromote = (
  config: () => Config,
  from: string,
  to: string,
  flags: { force?: boolean; by?: string },
) =>
  withStore(config(), async (store) => {
    const [source, target] = [await environmentNamed(store, from), await environmentNamed(store, to)];
    const result = await promoteRelease(store, source, target, {
      bundlesDir: bundlesDir(config()),
      force: flags.force,
      publishedBy: `${publisher(flags.by)} (promoted from ${from})`,
    });
    console.log(`promoting ${from}'s release ${result.version} to ${to}:`);
    printPublish(result);
    console.log(followers(config()));
    return 0;
  });
