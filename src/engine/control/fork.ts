import { PublicError } from "../../lib/errors.ts";
import type { ReleaseManifest } from "../../release/load.ts";
import type { ForkCopied } from "../../store/control.ts";
import type { EnvironmentRow } from "../../store/rows.ts";
import type { Store } from "../../store/store.ts";
import { secretNames } from "../../variables/declarations.ts";

export interface ForkRequest {
  handle: string;
  /** The organization the fork belongs to (the CLI and the API default to the source's). */
  organization: number;
  /** Copy the entities, links and files (their bytes shared until one side changes them). */
  data: boolean;
  /** Copy the secret variables too (sealed as they are). */
  secrets: boolean;
  /** How long the fork lives (parseTtl), null: until deleted. */
  ttlMs: number | null;
  at: number;
}

/**
 * Forks `source` (`env fork`, `POST /environments/{handle}/fork`): its active release and history, its
 * variables, with `data` its entities, links and files, schedules paused. Refused (409
 * `secrets_required`, naming them) when the active release declares secrets and they are not copied: the
 * fork's release could not run without them.
 */
export async function forkEnvironment(
  store: Store,
  source: EnvironmentRow,
  request: ForkRequest,
): Promise<{ environment: EnvironmentRow; copied: ForkCopied }> {
  if (!request.secrets && source.activeVersion !== null) {
    const release = await store.environment(source.id).releases.published(source.activeVersion);
    const secrets = secretNames((release?.manifest as ReleaseManifest | undefined)?.env);
    if (secrets.length > 0) {
      throw new PublicError(
        "secrets_required",
        `the release ${source.handle} serves (${source.activeVersion}) declares secrets ${secrets.join(", ")}: fork with --secrets (secrets: true) to copy them`,
        { secrets },
      );
    }
  }
  return store.control.environments.fork(source.id, {
    handle: request.handle,
    organization: request.organization,
    at: request.at,
    data: request.data,
    secrets: request.secrets,
    expiresAt: request.ttlMs === null ? null : request.at + request.ttlMs,
  });
}
