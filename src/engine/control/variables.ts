import type { LoadedRelease, ReleaseManifest } from "../../release/load.ts";
import type { Store } from "../../store/store.ts";
import type { Sealer } from "../../variables/sealing.ts";
import { VariableAdmin } from "../variables.ts";

/**
 * An environment's VariableAdmin where no environment is composed (the CLI on the database, the apex):
 * its declarations read from the active release's stored manifest, never its bundle. Servers of the
 * environment see a change on their next poll (it moves the environment's revision).
 */
export async function variableAdminOver(store: Store, sealer: Sealer | null): Promise<VariableAdmin> {
  const { version } = await store.releases.active();
  const row = version === null ? null : await store.releases.published(version);
  const env = (row?.manifest as ReleaseManifest | undefined)?.env ?? {};
  // VariableAdmin reads only the release's declarations (`env`).
  const release = { env } as unknown as LoadedRelease;
  return new VariableAdmin({ store, sealer, release: () => release, changed: async () => {} });
}
