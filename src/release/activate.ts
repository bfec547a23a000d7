import { PublicError } from "../lib/errors.ts";
import type { Store } from "../store/store.ts";
import type { ReleaseManifest } from "./load.ts";
import { refuseMissingVariables } from "./variables.ts";

/** What a release version can be (publish refuses any other); anything else names no release. */
export const RELEASE_VERSION = /^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$/;

export const releaseNotFound = (version: string) =>
  new PublicError("release_not_found", `no release ${version} is published`);

/**
 * Makes a published release the active one: what `bun run release activate` and
 * `POST /releases/{version}/activate` both do. Every server sharing the database switches to it on its
 * next poll of the active release. Throws release_not_found for a version never published,
 * variables_missing when a variable it requires is not set in the environment.
 */
export async function activateRelease(
  store: Store,
  version: string,
  at: number,
): Promise<{ version: string; revision: number }> {
  const row = RELEASE_VERSION.test(version) ? await store.releases.get(version) : null;
  if (!row) throw releaseNotFound(version);
  const manifest = row.manifest as ReleaseManifest | null;
  if (manifest) await refuseMissingVariables(store, { version, env: manifest.env });
  const schedules = (manifest?.schedules ?? []).length > 0;
  return { version, revision: await store.releases.activate(version, at, schedules) };
}
