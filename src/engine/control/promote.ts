import { PublicError } from "../../lib/errors.ts";
import { ReleaseConflict, ReleaseError } from "../../release/errors.ts";
import { type PublishResult, publishBuiltRelease } from "../../release/publish.ts";
import type { EnvironmentRow } from "../../store/rows.ts";
import type { Store } from "../../store/store.ts";

export interface PromoteOptions {
  /** The process's bundles folder (the release's code is loaded and checked, as a publish does). */
  bundlesDir: string;
  /** Publish even when the schema change would orphan data stored in the target. */
  force?: boolean;
  /** Who promotes, as the target's history shows it. */
  publishedBy: string;
  now?: () => number;
}

/**
 * Publishes `from`'s active release (its stored bundle, under its version) to `to` through the one
 * publish path (`publishBuiltRelease`): the same contract diff and refusals as `release publish` (a
 * version `to` holds with other content, a schema change that orphans its data without `force`, its
 * required variables unset), then activated. The same version with the same content in `to` is only
 * activated. An environment is not promoted into itself. Refusals are PublicErrors (409 `release_conflict`, 400 `invalid_request`).
 */
export async function promoteRelease(
  store: Store,
  from: EnvironmentRow,
  to: EnvironmentRow,
  options: PromoteOptions,
): Promise<PublishResult> {
  if (from.id === to.id) {
    throw new PublicError(
      "invalid_request",
      `promote publishes one environment's release to another: ${to.handle} is both`,
    );
  }
  const source = store.environment(from.id).releases;
  const active = await source.active();
  const row = active.version === null ? null : await source.get(active.version);
  if (!row) {
    throw new PublicError("release_not_found", `environment ${from.handle} has no active release to promote`);
  }
  try {
    return await publishBuiltRelease(
      { code: row.bundle, hash: row.bundleHash, defaultVersion: row.version },
      {
        store: store.environment(to.id),
        bundlesDir: options.bundlesDir,
        version: row.version,
        force: options.force,
        whenTaken: "refuse",
        publishedBy: options.publishedBy,
        now: options.now,
      },
    );
  } catch (error) {
    if (error instanceof ReleaseConflict) throw new PublicError("release_conflict", error.message);
    if (error instanceof ReleaseError) throw new PublicError("invalid_request", error.message);
    throw error;
  }
}
