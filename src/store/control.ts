import { PublicError } from "../lib/errors.ts";
import type { EnvironmentRow, GrantRow, OrganizationRow, ScopedKeyRow } from "./rows.ts";

/**
 * What a hosting service knows of itself (docs/decisions/hosting-layout.md): its organizations, their
 * environments, the keys stored for either, and who may use which environment. Service-wide: the same
 * object in every environment's view of the store.
 */
export interface ControlStore {
  readonly organizations: OrganizationStore;
  readonly environments: EnvironmentStore;
  readonly keys: ScopedKeyStore;
  readonly grants: GrantStore;
}

/** A handle already taken (organizations among organizations, environments across the service). */
export class HandleTaken extends PublicError {
  override name = "HandleTaken";
  constructor(handle: string, what: "organization" | "environment") {
    super("invalid_request", `the ${what} handle ${JSON.stringify(handle)} is taken`, { handle });
  }
}

export interface OrganizationStore {
  /** Throws HandleError for a handle that is not a DNS label, HandleTaken for one in use. */
  create(handle: string, at: number): Promise<OrganizationRow>;
  byHandle(handle: string): Promise<OrganizationRow | null>;
  byId(id: number): Promise<OrganizationRow | null>;
  /** Every organization, by handle. */
  list(): Promise<OrganizationRow[]>;
}

/** How many rows of each table an environment holds (what deleting it removes). */
export type EnvironmentContents = Record<EnvironmentTable, number>;

export const ENVIRONMENT_TABLES = [
  "executions",
  "executionLogs",
  "workflowRuns",
  "workflowSteps",
  "scheduledInvocations",
  "scheduleTicks",
  "dataEntities",
  "dataLinks",
  "dataAttrs",
  "files",
  "releases",
  "apiTokens",
  "grants",
  "scopedKeys",
  "variables",
] as const;
export type EnvironmentTable = (typeof ENVIRONMENT_TABLES)[number];

/** What `EnvironmentStore.fork` copied, rows by kind (a fork of no data copies no entity, link or file). */
export type ForkCopied = { releases: number; variables: number; entities: number; links: number; files: number };

/** What a fork is made as: its handle and organization, and what it takes of the source. */
export interface ForkTarget {
  handle: string;
  organization: number;
  at: number;
  /** The entities, links, attributes and file rows (the file bytes stay the source's: `blob_environment`). */
  data: boolean;
  /** Secret variables too (their sealed values as they are); plain variables are always copied. */
  secrets: boolean;
  expiresAt: number | null;
}

export interface EnvironmentStore {
  /**
   * A new environment of an organization, with no active release. Its `changed` takes the next number of
   * the service-wide sequence, so instances polling `changedSince` learn of it. Throws HandleError,
   * HandleTaken.
   */
  create(handle: string, organization: number, at: number): Promise<EnvironmentRow>;
  byHandle(handle: string): Promise<EnvironmentRow | null>;
  byId(id: number): Promise<EnvironmentRow | null>;
  /** Every environment (of one organization when given), by handle; single mode's unnamed one last. */
  list(organization?: number): Promise<EnvironmentRow[]>;
  /**
   * Names environment 1 (single mode's, handle null) when hosting mode starts on a single-mode database,
   * and puts it in `organization` when given and it has none. Answers its row; a no-op when it has a
   * handle already. Throws HandleError, HandleTaken.
   */
  nameSingle(handle: string, organization?: number): Promise<EnvironmentRow>;
  /**
   * The environments whose row changed after `changed` (an activation, a creation, a naming, the start of
   * a delete), by `changed`: the poll of every environment's active release. An environment being deleted
   * is answered first with no active release (stop serving it); once deleted it is absent, so a poller
   * that missed that answer learns of it by comparing `list()` with what it serves.
   */
  changedSince(changed: number): Promise<EnvironmentRow[]>;
  /** Those of `ids` that still have a row (a poller's check of the environments it serves). */
  present(ids: number[]): Promise<number[]>;
  /** What `delete` would remove now (counts). Null for an unknown id. */
  describeDelete(id: number): Promise<EnvironmentContents | null>;
  /**
   * Takes the environment out of service (no active release, `changed` bumped: what the service-wide poll
   * of `changedSince` is to read, docs/decisions/hosting-runtime.md), removes every row of it, a few
   * thousand rows a statement (so other environments' writes wait one batch at most), then its grants and
   * scoped keys, then its row; answers what it removed, null for an unknown id. `dropFiles` is handed each
   * batch of file rows (path, blobEnvironment) before they go (the bytes before their records: a delete
   * stopped in between finds those rows again); the caller drops the bytes from the environment's storage
   * (those it owns and no other environment reads: files/shared-bytes.ts). Stopped midway (a crash),
   * calling it again finishes the job.
   */
  delete(id: number, dropFiles: (files: DroppedFile[]) => Promise<void>): Promise<EnvironmentContents | null>;
  /**
   * Pauses or resumes its release's schedules (hosting mode's schedule loop skips a paused environment).
   * Resuming makes its next tick due at `at` (the pass then applies each schedule's catch-up rule, as after
   * downtime). Answers the row, null for an unknown id.
   */
  setSchedulesPaused(id: number, paused: boolean, at: number): Promise<EnvironmentRow | null>;
  /**
   * Takes up to `limit` environments whose `expires_at` passed by `now` (never environment 1), moving it to
   * `leaseUntil` so one instance deletes each (if it dies, the environment is due again then). Answers them.
   */
  claimExpired(now: number, leaseUntil: number, limit: number): Promise<EnvironmentRow[]>;
  /** Sets or clears when the service deletes the environment. */
  setExpiresAt(id: number, expiresAt: number | null): Promise<void>;
  /**
   * A new environment copied from `source` (docs/decisions/forks.md): its release history with the
   * source's active release active (revision 1, activated `at`, schedules paused, no tick due), its plain
   * variables (and secrets when asked), and with `data` its entities, links, attributes and file rows, the
   * file rows naming the environment whose storage holds their bytes. Everything from one snapshot of the
   * source, which is not stopped meanwhile; executions, runs, logs, schedule ticks, delayed invocations,
   * tokens, grants and keys are not copied. The fork is seen (`byHandle`, `changedSince`, `list`) only
   * once complete; one interrupted is cleaned by a later call. Throws HandleError, HandleTaken, and
   * `environment_not_found` for an unknown source.
   */
  fork(source: number, target: ForkTarget): Promise<{ environment: EnvironmentRow; copied: ForkCopied }>;
}

/** A file row of an environment being deleted: `blobEnvironment` non-null when its bytes are another's. */
export interface DroppedFile {
  path: string;
  blobEnvironment: number | null;
}

/**
 * Every environment of an organization (present and future), or one environment: what a stored key
 * administers, what a grant lets a person use.
 */
export type Scope = { organization: number; environment?: never } | { environment: number; organization?: never };

/** A live key as `verify` answers it. */
export interface VerifiedKey {
  id: string;
  prefix: string;
  organization: number | null;
  environment: number | null;
}

export type ScopedKeyListRow = Omit<ScopedKeyRow, "keyHash">;

export interface ScopedKeyStore {
  create(scope: Scope, keyHash: string, prefix: string, at: number): Promise<ScopedKeyListRow>;
  /** The keys of one organization or environment, or every key; oldest first, without their hashes. */
  list(scope?: Scope): Promise<ScopedKeyListRow[]>;
  /** The keys (live or revoked) whose displayed prefix is `prefix`. */
  byPrefix(prefix: string): Promise<ScopedKeyListRow[]>;
  byId(id: string): Promise<ScopedKeyListRow | null>;
  /** Answers whether a live key was revoked now. */
  revoke(id: string, at: number): Promise<boolean>;
  /**
   * The live key stored under `keyHash`, or null (unknown or revoked). Records `last_used_at`, at most
   * once a minute per key, so a key sent with every request does not write with every request.
   */
  verify(keyHash: string, at: number): Promise<VerifiedKey | null>;
}

export interface GrantStore {
  /** Lets `userId` use the scope's environments; answers false when the grant exists already. */
  grant(userId: string, scope: Scope, at: number): Promise<boolean>;
  /**
   * Takes the grant away and revokes the person's user tokens in every environment they may no longer use
   * (one still covered by another grant keeps them). Answers whether there was a grant, and how many
   * tokens were revoked. Their open sockets are the runtime's to end.
   */
  revoke(userId: string, scope: Scope, at: number): Promise<{ revoked: boolean; tokens: number }>;
  /** The grants of an organization (both kinds), of an environment (only its own), or of a person; every grant without a filter. */
  list(filter?: { organization?: number; environment?: number; userId?: string }): Promise<GrantRow[]>;
  /** Whether `userId` was granted the environment or its whole organization. */
  mayUse(userId: string, environment: number): Promise<boolean>;
}

/**
 * The control store, its implementation (drizzle/control.ts, with its prepared statements) loaded on the
 * first call: single mode, which never calls it, does not hold it (~0.4 MiB of an idle server, measured
 * on the compiled binary). Every method is async, so a call waits for the load, then is the loaded one's.
 */
export function loadedOnFirstUse(load: () => Promise<ControlStore>): ControlStore {
  let loaded: Promise<ControlStore> | null = null;
  const loading = () => {
    loaded ??= load().catch((error) => {
      loaded = null;
      throw error;
    });
    return loaded;
  };
  /** A method of the loaded part; `then` is none, so awaiting a part answers the part. */
  const method = (name: keyof ControlStore, key: PropertyKey) =>
    key === "then"
      ? undefined
      : async (...args: unknown[]) => {
          const part = (await loading())[name] as unknown as Record<PropertyKey, (...args: unknown[]) => unknown>;
          return part[key]?.(...args);
        };
  const part = <Part extends keyof ControlStore>(name: Part): ControlStore[Part] =>
    new Proxy({} as ControlStore[Part], { get: (_, key) => method(name, key) });
  return {
    organizations: part("organizations"),
    environments: part("environments"),
    keys: part("keys"),
    grants: part("grants"),
  };
}
