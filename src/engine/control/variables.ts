import type { LoadedRelease, ReleaseManifest } from "../../release/load.ts";
import type { Principal } from "../../sdk/index.ts";
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

/**
 * Whether a set makes a secret: as asked, else what the variable is now (or the release declares), so a
 * secret replaced without saying so stays one; a new name is plain.
 */
export async function secretOrAsItIs(
  admin: VariableAdmin,
  principal: Principal,
  name: string,
  secret: boolean | undefined,
): Promise<boolean> {
  if (secret !== undefined) return secret;
  return (await admin.list(principal)).find((v) => v.name === name)?.secret ?? false;
}
