import type { Config } from "../config.ts";
import { bundlesDir } from "../main.ts";
import { ReleaseError } from "../release/errors.ts";
import { type PublishResult, publishRelease } from "../release/publish.ts";
import { openStore } from "../store/open.ts";

export async function releaseCommand(
  config: Config,
  args: string[],
  flags: { version?: string; force?: boolean },
): Promise<number> {
  const [sub, target] = args;
  const store = await openStore(config.databaseUrl);
  try {
    switch (sub) {
      case "publish": {
        if (!target) throw new ReleaseError("usage: bun run release publish <dir> [--version <v>] [--force]");
        const result = await publishRelease({
          store,
          bundlesDir: bundlesDir(config),
          dir: target,
          version: flags.version,
          force: flags.force,
          whenTaken: "refuse",
        });
        printPublish(result);
        return 0;
      }
      case "list": {
        const [releases, active] = await Promise.all([store.listReleases(), store.getActive()]);
        if (releases.length === 0) console.log("no releases published yet");
        for (const r of releases) {
          const actions = (r.manifest as { actions: unknown[] }).actions.length;
          const mark = r.version === active.version ? "*" : " ";
          console.log(
            `${mark} ${r.version.padEnd(24)} ${new Date(r.createdAt).toISOString()}  ${actions} actions  ${r.bundleHash.slice(0, 12)}`,
          );
        }
        return 0;
      }
      case "activate": {
        if (!target) throw new ReleaseError("usage: bun run release activate <version>");
        if (!(await store.getRelease(target))) throw new ReleaseError(`no release ${target}; see bun run release list`);
        await store.activate(target, Date.now());
        console.log(`release ${target} is now active; running servers switch within a second`);
        return 0;
      }
      default:
        throw new ReleaseError("usage: bun run release publish <dir> [--version <v>] | list | activate <version>");
    }
  } finally {
    await store.close();
  }
}

export function printPublish(result: PublishResult): void {
  const verb = result.status === "published" ? "published" : "already stored; activated";
  console.log(`release ${result.version} ${verb}${result.previousVersion ? ` (was ${result.previousVersion})` : ""}`);
  for (const c of result.changes) {
    console.log(`  ${c.change.padEnd(9)} ${c.name.padEnd(32)} ${c.contractHash.slice(0, 16)}`);
  }
}
