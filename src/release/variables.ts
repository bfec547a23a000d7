import { PublicError } from "../lib/errors.ts";
import type { Store } from "../store/store.ts";
import { missing, missingMessage } from "../variables/declarations.ts";
import type { ReleaseManifest } from "./load.ts";

/**
 * Refuses (409 variables_missing) to make live a release whose required variables are not set in the
 * store's environment: the one check a publish that activates and an activation both go through,
 * whether from the CLI, `dev`, `start --release` or HTTP. Variables set before any release declared
 * them count.
 */
export async function refuseMissingVariables(store: Store, manifest: Pick<ReleaseManifest, "version" | "env">) {
  const declared = manifest.env;
  if (!declared || Object.keys(declared).length === 0) return;
  const names = missing(
    declared,
    (await store.variables.list()).map((row) => row.name),
  );
  if (names.length === 0) return;
  // Single mode's environment has no handle: its command names none.
  const handle = (await store.control.environments.byId(store.environmentId))?.handle ?? null;
  throw new PublicError("variables_missing", missingMessage(manifest.version, names, declared, handle), {
    missing: names,
  });
}
