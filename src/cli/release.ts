import type { Config } from "../config.ts";
import { bundlesDir } from "../main.ts";
import { ReleaseError } from "../release/errors.ts";
import { type PublishResult, publishRelease } from "../release/publish.ts";
import { describeDatabase, withStore } from "./with-store.ts";

export const releasePublish = (config: Config, dir: string, flags: { version?: string; force?: boolean }) =>
  withStore(config, async (store) => {
    const result = await publishRelease({
      store,
      bundlesDir: bundlesDir(config),
      dir,
      version: flags.version,
      force: flags.force,
      whenTaken: "refuse",
    });
    printPublish(result);
    console.log(followers(config));
    return 0;
  });

export const releaseList = (config: Config) =>
  withStore(config, async (store) => {
    const [releases, active] = await Promise.all([store.releases.list(), store.releases.active()]);
    if (releases.length === 0) console.log("no releases published yet");
    for (const r of releases) {
      const actions = (r.manifest as { actions: unknown[] }).actions.length;
      const mark = r.version === active.version ? "*" : " ";
      console.log(
        `${mark} ${r.version.padEnd(24)} ${new Date(r.createdAt).toISOString()}  ${actions} actions  ${r.bundleHash.slice(0, 12)}`,
      );
    }
    return 0;
  });

export const releaseActivate = (config: Config, version: string) =>
  withStore(config, async (store) => {
    if (!(await store.releases.get(version))) throw new ReleaseError(`no release ${version}; see bun run release list`);
    await store.releases.activate(version, Date.now());
    console.log(`release ${version} is now active`);
    console.log(followers(config));
    return 0;
  });

export function printPublish(result: PublishResult): void {
  const verb = result.status === "published" ? "published" : "already stored; activated";
  const was = result.active.version;
  console.log(`release ${result.version} ${verb}${was ? ` (was ${was})` : ""}`);
  for (const c of result.changes) {
    console.log(`  ${c.change.padEnd(9)} ${c.name.padEnd(32)} ${c.contractHash.slice(0, 16)}`);
  }
}

/** Who switches after an activation: every server polls its database's active release. */
export function followers(config: Config): string {
  return `every server on ${describeDatabase(config.databaseUrl)} switches to it within its RELEASE_POLL_MS (${config.releasePollMs} ms with this environment)`;
}
