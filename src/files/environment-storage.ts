import { InvalidPath } from "./paths.ts";
import type { Storage } from "./storage.ts";

/** The first segment of the keys other environments' bytes are stored under: no caller's path may start with it. */
export const ENVIRONMENTS_FOLDER = "environments";

/**
 * The bytes of environment `environment`: environment 1 (single mode) keeps exactly the keys it always
 * had, so its files stay where they are; another stores under `environments/<id>/` (a folder inside a
 * disk's root, a key prefix in a bucket, its presigned URLs included). Cheap: the driver is shared.
 * A path that starts with that folder is refused in every environment, so none reaches another's bytes.
 */
export function storageFor(storage: Storage, environment: number): Storage {
  const key = (path: string) => keyOf(environment, path);
  const { signPut, signGet } = storage;
  return {
    put: async (path, body, options) => storage.put(key(path), body, options),
    get: async (path) => storage.get(key(path)),
    delete: async (path) => storage.delete(key(path)),
    copy: async (from, to) => storage.copy(key(from), key(to)),
    check: () => storage.check(),
    signPut: signPut && (async (path, expiresInSeconds) => signPut.call(storage, key(path), expiresInSeconds)),
    signGet: signGet && (async (path, expiresInSeconds) => signGet.call(storage, key(path), expiresInSeconds)),
  };
}

/** The driver's key of `path` in environment `environment`'s bytes. */
export function keyOf(environment: number, path: string): string {
  const prefix = environment === 1 ? "" : `${ENVIRONMENTS_FOLDER}/${environment}/`;
  return prefix + checkOwnPath(path);
}

/** A caller's path (already checked by `checkPath`) unless it runs into the environments' folder. */
export function checkOwnPath(path: string): string {
  if (path === ENVIRONMENTS_FOLDER || path.startsWith(`${ENVIRONMENTS_FOLDER}/`)) {
    throw new InvalidPath(`paths under ${ENVIRONMENTS_FOLDER}/ are reserved for the service`);
  }
  return path;
}
