import { indexedAttrs, type SchemaManifest } from "../data/schema.ts";
import { messageOf } from "../lib/errors.ts";
import type { ActiveRelease } from "../store/releases.ts";
import type { Store } from "../store/store.ts";
import type { ContractChange, PublishAnswer } from "../wire/views.ts";
import { RELEASE_VERSION } from "./activate.ts";
import { type BuiltBundle, buildBundle } from "./build.ts";
import { ReleaseConflict, ReleaseError } from "./errors.ts";
import { asRelease, type LoadedRelease, loadBundle, type ReleaseManifest } from "./load.ts";
import { diffSchedules } from "./schedules.ts";
import { folderVersion, readReleaseSource } from "./source.ts";
import { refuseMissingVariables } from "./variables.ts";

/** A release folder built into a bundle: everything a publish needs of the source (the server never builds). */
export interface BuiltRelease extends BuiltBundle {
  /** The version when neither the publisher nor release.ts names one: the folder's name. */
  defaultVersion: string;
}

export interface PublishOptions extends PublishBuiltOptions {
  dir: string;
}

export interface PublishBuiltOptions {
  store: Store;
  bundlesDir: string;
  /** Overrides release.ts's version (which overrides the folder's name). */
  version?: string;
  /**
   * When the version is already taken by different content: `refuse` (the CLI's publish) or
   * `suffix`, which publishes as `<version>+<hash8>` (dev and start, which republish on every edit).
   */
  whenTaken: "refuse" | "suffix";
  /** Who publishes, as they name themselves (stored with a new release; shown in its history). */
  publishedBy?: string;
  /** Publish even when the schema change would orphan stored data. */
  force?: boolean;
  /**
   * Whether to make it the active release (default: always). `stored`: this content was already published
   * before this call. Declining still stores new content, so it can be activated later.
   */
  shouldActivate?: (active: ActiveRelease, candidate: { base: string; version: string; stored: boolean }) => boolean;
  now?: () => number;
}

export interface PublishResult extends PublishAnswer {
  /** The version asked for: `version` without the `+hash` that `suffix` may have added. */
  base: string;
  /** The active release before this call. */
  active: ActiveRelease;
  release: LoadedRelease;
}

/** Builds a release folder, stores it under its version and makes it the active release. */
export async function publishRelease({ dir, ...options }: PublishOptions): Promise<PublishResult> {
  return publishBuiltRelease(await buildRelease(dir), options);
}

/** What the CLI builds and uploads to publish over HTTP (`POST /releases`). */
export async function buildRelease(dir: string): Promise<BuiltRelease> {
  const source = readReleaseSource(dir);
  return { ...(await buildBundle(source)), defaultVersion: folderVersion(source) };
}

/**
 * Stores a built release under its version and makes it the active release: loads the bundle (its code
 * runs in this process), checks its contracts and schema change against what is stored, then stores it.
 */
export async function publishBuiltRelease(built: BuiltRelease, options: PublishBuiltOptions): Promise<PublishResult> {
  const { store } = options;
  const now = options.now ?? Date.now;
  const bundle = await loadBundle(built, options.bundlesDir);
  // A server compiles validators on first use; a schema the compiler refuses is refused here.
  for (const [name, action] of bundle.actions) {
    try {
      action.compileValidators();
    } catch (error) {
      throw new ReleaseError(`actions/${name.replace(".", "/")}: its schemas do not compile: ${messageOf(error)}`);
    }
  }
  const base = options.version ?? bundle.declared?.version ?? built.defaultVersion;
  if (!RELEASE_VERSION.test(base)) {
    throw new ReleaseError(`version "${base}" is not valid: use letters, digits and . _ + - (at most 64 characters)`);
  }

  let version = base;
  let existing = await store.releases.get(version);
  if (existing && existing.bundleHash !== bundle.hash) {
    if (options.whenTaken === "refuse") {
      throw new ReleaseConflict(
        `version ${version} is already published with different content; publish under a new version (--version) or activate ${version} to roll back to it`,
      );
    }
    version = `${base}+${bundle.hash.slice(0, 8)}`;
    existing = await store.releases.get(version);
  }

  const release = asRelease(bundle, version);
  const active = await store.releases.active();
  const previous = active.version ? await store.releases.get(active.version) : null;
  const activated =
    active.version === version ||
    (options.shouldActivate?.(active, { base, version, stored: existing !== null }) ?? true);
  // Before it is stored: a release refused for its variables is published again once they are set.
  if (activated && active.version !== version) await refuseMissingVariables(store, release.manifest);
  if (!existing) {
    if (!options.force)
      await refuseOrphaning(store, (previous?.manifest as ReleaseManifest | undefined)?.schema, release);
    // Indexes first: a unique index that existing rows break refuses the release before it is stored.
    await store.data.ensureIndexes(indexedAttrs(release.data));
    try {
      await store.releases.insert({
        version,
        bundleHash: bundle.hash,
        manifest: release.manifest,
        bundle: built.code,
        createdAt: now(),
        publishedBy: options.publishedBy ?? null,
      });
    } catch (error) {
      // Another publisher stored the same version first; fine if it is the same content.
      const raced = await store.releases.get(version);
      if (raced?.bundleHash !== bundle.hash) throw error;
    }
  }
  if (activated && active.version !== version) {
    await store.releases.activate(version, now(), (release.manifest.schedules ?? []).length > 0);
  }
  const before = (previous?.manifest as ReleaseManifest | undefined) ?? null;
  return {
    version,
    base,
    status: existing ? "existing" : "published",
    activated,
    previous: active.version,
    active,
    release,
    changes: diffContracts(before, release.manifest),
    scheduleChanges: diffSchedules(before?.schedules, release.manifest.schedules ?? []),
  };
}

/** What a publish answers over HTTP (`POST /releases`): the result without what only this process holds. */
export const publishAnswer = (result: PublishResult): PublishAnswer => ({
  version: result.version,
  status: result.status,
  activated: result.activated,
  previous: result.previous,
  changes: result.changes,
  scheduleChanges: result.scheduleChanges,
});

/** Refuses a schema that drops an entity that has rows, or changes the type of an attribute rows hold. */
async function refuseOrphaning(store: Store, before: SchemaManifest | undefined, release: LoadedRelease) {
  if (!before) return;
  const after = release.manifest.schema;
  const problems: string[] = [];
  for (const [entity, attrs] of Object.entries(before.entities)) {
    const rows = await store.data.countRows(entity);
    if (rows === 0) continue;
    if (!after.entities[entity]) {
      problems.push(`entity ${entity} is removed but has ${rows} rows`);
      continue;
    }
    for (const [label, attr] of Object.entries(attrs)) {
      const now = after.entities[entity]?.[label];
      if (now && now.type !== attr.type) problems.push(`${entity}.${label} changes from ${attr.type} to ${now.type}`);
    }
  }
  if (problems.length > 0) {
    throw new ReleaseConflict(
      `this release would orphan stored data (publish with --force to accept):\n  ${problems.join("\n  ")}`,
    );
  }
}

export function diffContracts(before: ReleaseManifest | null, after: ReleaseManifest): ContractChange[] {
  const old = new Map(before?.actions.map((a) => [a.name, a.contractHash]) ?? []);
  const changes: ContractChange[] = after.actions.map((a) => {
    const previous = old.get(a.name);
    old.delete(a.name);
    const change = previous === undefined ? "added" : previous === a.contractHash ? "unchanged" : "changed";
    return { name: a.name, change, contractHash: a.contractHash };
  });
  for (const [name, contractHash] of old) changes.push({ name, change: "removed", contractHash });
  return changes;
}
