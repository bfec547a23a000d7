import { PublicError } from "../lib/errors.ts";
import { iso } from "../lib/values.ts";
import { activateRelease, RELEASE_VERSION, releaseNotFound } from "../release/activate.ts";
import type { ReleaseManifest } from "../release/load.ts";
import type { Principal } from "../sdk/index.ts";
import type { ReleaseKey } from "../store/releases.ts";
import type { PublishedRelease, ReleaseContracts } from "../wire/views.ts";

export type { ReleaseKey };

import type { Store } from "../store/store.ts";

export interface ReleasePage {
  items: PublishedRelease[];
  /** Where the next page starts, when another may follow. */
  next: ReleaseKey | null;
}

const serviceOnly = (principal: Principal) => {
  if (principal.kind !== "service") throw new PublicError("access_denied", "releases are for service keys");
};

/**
 * The release history and activation, for service keys: what `bun run release list` and
 * `bun run release activate` do, over the API (the same activateRelease).
 */
export class ReleaseAdmin {
  constructor(
    private readonly $: {
      store: Store;
      /** Loads the active release into this process now (others follow on their next poll). */
      refresh: () => Promise<void>;
      now?: () => number;
    },
  ) {}

  async history(principal: Principal, query: { limit: number; after?: ReleaseKey }): Promise<ReleasePage> {
    serviceOnly(principal);
    const [rows, active] = await Promise.all([
      this.$.store.releases.history({ limit: query.limit + 1, after: query.after }),
      this.$.store.releases.active(),
    ]);
    const more = rows.length > query.limit;
    if (more) rows.length = query.limit;
    const last = rows.at(-1);
    return {
      items: rows.map((r) => ({
        version: r.version,
        bundleHash: r.bundleHash,
        publishedAt: new Date(r.createdAt).toISOString(),
        publishedBy: r.publishedBy,
        active: r.version === active.version,
        activatedAt: r.version === active.version ? iso(active.activatedAt) : null,
      })),
      next: more && last ? { createdAt: last.createdAt, version: last.version } : null,
    };
  }

  /** A published release with every action's contract (whoever may call it): its manifest, never its bundle. */
  async published(principal: Principal, version: string): Promise<ReleaseContracts> {
    serviceOnly(principal);
    const [row, active] = await Promise.all([
      RELEASE_VERSION.test(version) ? this.$.store.releases.published(version) : null,
      this.$.store.releases.active(),
    ]);
    if (!row) throw releaseNotFound(version);
    const manifest = row.manifest as ReleaseManifest;
    const isActive = row.version === active.version;
    return {
      version: row.version,
      bundleHash: row.bundleHash,
      publishedAt: new Date(row.createdAt).toISOString(),
      publishedBy: row.publishedBy,
      active: isActive,
      activatedAt: isActive ? iso(active.activatedAt) : null,
      description: manifest.description,
      actions: manifest.actions,
    };
  }

  /** Makes `version` the active release (activating the active one again only bumps the revision). */
  async activate(
    principal: Principal,
    version: string,
  ): Promise<{ version: string; previous: string | null; revision: number; activatedAt: string }> {
    serviceOnly(principal);
    const before = await this.$.store.releases.active();
    const at = (this.$.now ?? Date.now)();
    const { revision } = await activateRelease(this.$.store, version, at);
    await this.$.refresh();
    return { version, previous: before.version, revision, activatedAt: new Date(at).toISOString() };
  }
}
