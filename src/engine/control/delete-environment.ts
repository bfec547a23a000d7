import { SharedBytes } from "../../files/shared-bytes.ts";
import type { Storage } from "../../files/storage.ts";
import { PublicError } from "../../lib/errors.ts";
import type { EnvironmentContents } from "../../store/control.ts";
import type { Store } from "../../store/store.ts";

/**
 * Deletes an environment with its file bytes: `env delete --yes` and `DELETE /environments/{handle}`
 * (the control API). The bytes of each batch of files go from the environment's storage before their
 * rows (a delete stopped in between finds those paths again). Bytes a fork (or a source) still reads
 * are handed to it, not deleted, and a file that reads another environment's bytes drops none: its
 * forks and its source stay whole. Null when it was deleted meanwhile.
 */
export function deleteEnvironment(store: Store, storage: Storage, id: number): Promise<EnvironmentContents | null> {
  const shared = new SharedBytes(store, storage);
  return store.control.environments.delete(id, (files) => shared.dropBytesOf(id, files));
}

/** Environment 1: single mode's database, named HANDLE by every start in hosting mode (nameSingle). */
export const FIRST_ENVIRONMENT = 1;

/** Environment 1 is never deleted: without its row no instance in hosting mode starts. */
export function refuseDeletingFirst(id: number, handle: string): void {
  if (id !== FIRST_ENVIRONMENT) return;
  throw new PublicError(
    "access_denied",
    `environment ${handle} is the service's first (single mode's database, named by HANDLE at start): it is not deleted`,
  );
}
