import type { Authenticator } from "../../auth/authenticator.ts";
import { createScopedKey } from "../../auth/scoped-keys.ts";
import type { Storage } from "../../files/storage.ts";
import { PublicError } from "../../lib/errors.ts";
import { HandleError } from "../../lib/handles.ts";
import { publishAnswer } from "../../release/publish.ts";
import {
  type EnvironmentContents,
  type ForkCopied,
  HandleTaken,
  type Scope,
  type ScopedKeyListRow,
} from "../../store/control.ts";
import type { EnvironmentRow, GrantRow, OrganizationRow } from "../../store/rows.ts";
import type { Store } from "../../store/store.ts";
import type { Sealer } from "../../variables/sealing.ts";
import type { Instance, PublishAnswer } from "../../wire/views.ts";
import { liveInstances } from "../fleet.ts";
import type { VariableAdmin, VariableView } from "../variables.ts";
import { type ControlCaller, controlCallerOf } from "./caller.ts";
import { deleteEnvironment, refuseDeletingFirst } from "./delete-environment.ts";
import { forkEnvironment } from "./fork.ts";
import { type ControlPage, pageAfter } from "./paging.ts";
import { promoteRelease } from "./promote.ts";
import { parseTtl } from "./ttl.ts";
import { variableAdminOver } from "./variables.ts";

export { ENVIRONMENT_TABLES } from "../../store/control.ts";
export type { ControlCaller } from "./caller.ts";

export interface ControlDeps {
  store: Store;
  /** The process's file storage: a deleted environment's bytes go from it. */
  storage: Storage;
  /** An environment's URL (`<scheme>://<handle>.<apex>[:port]`). */
  environmentUrl: (handle: string) => string;
  /** Ends an environment's sockets and running work on this instance before its rows go. */
  evict?: (id: number) => Promise<void>;
  /** What seals secrets set from the apex (SECRETS_KEY); none: a secret is refused (secrets_key_required). */
  sealer?: Sealer | null;
  /** The process's bundles folder: a promoted release's code is loaded and checked there, as a publish's. */
  bundlesDir?: string;
  /** One look at the environments' rows now (the service loops' poll): a change served here at once. */
  changed?: () => Promise<void>;
}

export interface OrganizationView {
  handle: string;
  createdAt: string;
}

export interface EnvironmentView {
  handle: string;
  organization: string | null;
  url: string;
  activeVersion: string | null;
  createdAt: string;
  /** The handle of the environment it was forked from (kept when that one is deleted), else null. */
  forkedFrom: string | null;
  /** When the service deletes it (a fork's TTL), else null. */
  expiresAt: string | null;
  /** Its release's schedules do not tick (a fork's start paused). */
  schedulesPaused: boolean;
}

export interface KeyView {
  id: string;
  prefix: string;
  organization: string | null;
  environment: string | null;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

export interface GrantView {
  user: string;
  organization: string;
  /** Null for a grant of every environment of the organization. */
  environment: string | null;
  createdAt: string;
}

const iso = (ms: number) => new Date(ms).toISOString();
const isoOrNull = (ms: number | null) => (ms === null ? null : iso(ms));

/** A handle refused by the store, with the control API's own codes. */
async function handled<T>(made: Promise<T>): Promise<T> {
  try {
    return await made;
  } catch (error) {
    if (error instanceof HandleError) throw new PublicError("invalid_handle", error.message, error.fields);
    if (error instanceof HandleTaken) throw new PublicError("handle_taken", error.message, error.fields);
    throw error;
  }
}

const noOrganization = (handle: string) =>
  new PublicError("organization_not_found", `no organization ${JSON.stringify(handle)} that this key may see`);
const noEnvironment = (handle: string) =>
  new PublicError("environment_not_found", `no environment ${JSON.stringify(handle)} that this key may see`);
const denied = (what: string) => new PublicError("access_denied", `this key may not ${what}`);
/** Who did it, as a release's history shows it (a label: the key's kind). */
const callerLabel = (caller: ControlCaller) =>
  caller.kind === "operator" ? "operator" : caller.kind === "organization" ? "organization key" : "environment key";

/**
 * A person's only question at the apex is which environments they may open: anything else is 403 for
 * them, before any lookup, so the answer is the same for what exists and what does not.
 */
function refusePerson(caller: ControlCaller): void {
  if (caller.kind === "person") {
    throw new PublicError(
      "access_denied",
      "a person signed in at the service may list the environments they may open (GET /environments), nothing more: administering takes an operator's or an organization's key",
    );
  }
}

/**
 * The control API's operations (organizations, environments, keys, grants) as a caller may do them: the
 * HTTP routes (routes.ts) are a thin adapter over these. What a caller may not see is answered as unknown
 * (404); what it sees but may not change is 403 (docs/decisions/control-api.md).
 */
export class ControlOperations {
  constructor(private readonly deps: ControlDeps) {}

  private get control() {
    return this.deps.store.control;
  }

  /** The caller an `Authorization` header names at the apex, or why there is none. */
  callerOf(auth: Authenticator, authorization: string | null) {
    return controlCallerOf({ auth, control: this.control }, authorization);
  }

  /** The environments a person may open: granted each, or their organization; environment 1 (no organization) to every person. */
  private async environmentsOfPerson(user: string): Promise<EnvironmentRow[]> {
    const [grants, envs] = await Promise.all([
      this.control.grants.list({ userId: user }),
      this.control.environments.list(),
    ]);
    const organizations = new Set(grants.filter((g) => g.environment === 0).map((g) => g.organization));
    const environments = new Set(grants.map((g) => g.environment));
    return envs.filter((e) => e.organization === null || organizations.has(e.organization) || environments.has(e.id));
  }

  private seesOrganization(caller: ControlCaller, id: number): boolean {
    return caller.kind === "operator" || (caller.kind === "organization" && caller.organization === id);
  }

  private seesEnvironment(caller: ControlCaller, env: EnvironmentRow): boolean {
    if (caller.kind === "environment") return caller.environment === env.id;
    return env.organization !== null ? this.seesOrganization(caller, env.organization) : caller.kind === "operator";
  }

  /** An operator, or a key of the environment's organization: what may change an environment. */
  private managesEnvironment(caller: ControlCaller, env: EnvironmentRow): boolean {
    return caller.kind !== "environment" && this.seesEnvironment(caller, env);
  }

  private async organizationSeen(caller: ControlCaller, handle: string): Promise<OrganizationRow> {
    const org = await this.control.organizations.byHandle(handle);
    if (!org || !this.seesOrganization(caller, org.id)) throw noOrganization(handle);
    return org;
  }

  private async environmentSeen(caller: ControlCaller, handle: string): Promise<EnvironmentRow> {
    const env = await this.control.environments.byHandle(handle);
    if (!env || env.handle === null || !this.seesEnvironment(caller, env)) throw noEnvironment(handle);
    return env;
  }

  private async environmentManaged(caller: ControlCaller, handle: string, what: string): Promise<EnvironmentRow> {
    const env = await this.environmentSeen(caller, handle);
    if (!this.managesEnvironment(caller, env)) throw denied(what);
    return env;
  }

  private async organizationHandles(): Promise<Map<number, string>> {
    return new Map((await this.control.organizations.list()).map((o) => [o.id, o.handle]));
  }

  private environmentView(env: EnvironmentRow, orgs: Map<number, string>): EnvironmentView {
    const handle = env.handle as string;
    return {
      handle,
      organization: env.organization === null ? null : (orgs.get(env.organization) ?? null),
      url: this.deps.environmentUrl(handle),
      activeVersion: env.activeVersion,
      createdAt: iso(env.createdAt),
      forkedFrom: env.forkedFrom,
      expiresAt: isoOrNull(env.expiresAt),
      schedulesPaused: env.schedulesPaused,
    };
  }

  // Organizations.

  async listOrganizations(
    caller: ControlCaller,
    page: ControlPage,
  ): Promise<{ items: OrganizationView[]; next: string | null }> {
    refusePerson(caller);
    const orgs = (await this.control.organizations.list()).filter((o) => this.seesOrganization(caller, o.id));
    return pageAfter(
      orgs,
      (o) => o.handle,
      page,
      (o) => ({ handle: o.handle, createdAt: iso(o.createdAt) }),
    );
  }

  /** The server processes of the service (an instance id names a host): an operator's only. */
  async instances(caller: ControlCaller): Promise<Instance[]> {
    refusePerson(caller);
    if (caller.kind !== "operator") throw denied("list the service's instances (an operator key, SERVICE_KEYS, may)");
    return liveInstances(this.deps.store);
  }

  async createOrganization(caller: ControlCaller, handle: string): Promise<OrganizationView> {
    refusePerson(caller);
    if (caller.kind !== "operator") throw denied("create organizations (an operator key, SERVICE_KEYS, may)");
    const org = await handled(this.control.organizations.create(handle, Date.now()));
    return { handle: org.handle, createdAt: iso(org.createdAt) };
  }

  async organization(caller: ControlCaller, handle: string): Promise<OrganizationView> {
    refusePerson(caller);
    const org = await this.organizationSeen(caller, handle);
    return { handle: org.handle, createdAt: iso(org.createdAt) };
  }

  // Environments.

  async listEnvironments(
    caller: ControlCaller,
    page: ControlPage,
    organization?: string,
  ): Promise<{ items: EnvironmentView[]; next: string | null }> {
    if (caller.kind === "person") return this.listEnvironmentsOfPerson(caller.user, page, organization);
    const orgId = organization === undefined ? undefined : (await this.organizationSeen(caller, organization)).id;
    const envs =
      caller.kind === "environment"
        ? [await this.control.environments.byId(caller.environment)].filter((e): e is EnvironmentRow => e !== null)
        : await this.control.environments.list(
            orgId ?? (caller.kind === "organization" ? caller.organization : undefined),
          );
    const seen = envs.filter((e) => e.handle !== null && (orgId === undefined || e.organization === orgId));
    const orgs = await this.organizationHandles();
    return pageAfter(
      seen,
      (e) => e.handle as string,
      page,
      (e) => this.environmentView(e, orgs),
    );
  }

  /** A person's list: what they may open, `organization` keeping those of the organization so named (none when unknown). */
  private async listEnvironmentsOfPerson(
    user: string,
    page: ControlPage,
    organization?: string,
  ): Promise<{ items: EnvironmentView[]; next: string | null }> {
    const orgs = await this.organizationHandles();
    const open = (await this.environmentsOfPerson(user)).filter(
      (e) =>
        e.handle !== null &&
        (organization === undefined || (e.organization !== null && orgs.get(e.organization) === organization)),
    );
    return pageAfter(
      open,
      (e) => e.handle as string,
      page,
      (e) => this.environmentView(e, orgs),
    );
  }

  async createEnvironment(caller: ControlCaller, handle: string, organization: string): Promise<EnvironmentView> {
    refusePerson(caller);
    if (caller.kind === "environment") throw denied("create environments (an organization key may, in its own)");
    const org = await this.organizationSeen(caller, organization);
    const env = await handled(this.control.environments.create(handle, org.id, Date.now()));
    return this.environmentView(env, new Map([[org.id, org.handle]]));
  }

  async environment(caller: ControlCaller, handle: string): Promise<EnvironmentView> {
    refusePerson(caller);
    const env = await this.environmentSeen(caller, handle);
    return this.environmentView(env, await this.organizationHandles());
  }

  /**
   * Without `confirm`, 409 `confirmation_required` naming what it would remove (as `env delete` without
   * `--yes` exits 1: a client that forgot it must not go on as if it were gone). With it, ends the
   * environment's work on this instance, then removes its rows and file bytes.
   */
  async deleteEnvironment(
    caller: ControlCaller,
    handle: string,
    confirm: boolean,
  ): Promise<{ handle: string; deleted: true; removed: EnvironmentContents }> {
    refusePerson(caller);
    const env = await this.environmentManaged(caller, handle, "delete its environment");
    refuseDeletingFirst(env.id, handle);
    if (!confirm) {
      const wouldRemove = await this.control.environments.describeDelete(env.id);
      if (!wouldRemove) throw noEnvironment(handle);
      throw new PublicError(
        "confirmation_required",
        `deleting environment ${handle} removes its rows and file bytes for good; send DELETE /environments/${handle}?confirm=true`,
        { wouldRemove },
      );
    }
    await this.deps.evict?.(env.id);
    const removed = await deleteEnvironment(this.deps.store, this.deps.storage, env.id);
    if (!removed) throw noEnvironment(handle);
    return { handle, deleted: true, removed };
  }

  // Keys.

  /** The scope a key route names, checked: an operator or the organization's key manages keys. */
  private async keyScope(
    caller: ControlCaller,
    on: { organization: string } | { environment: string },
  ): Promise<{ scope: Scope; organization: string | null; environment: string | null }> {
    refusePerson(caller);
    if ("organization" in on) {
      const org = await this.organizationSeen(caller, on.organization);
      return { scope: { organization: org.id }, organization: org.handle, environment: null };
    }
    const env = await this.environmentManaged(caller, on.environment, "manage keys");
    return { scope: { environment: env.id }, organization: null, environment: on.environment };
  }

  private keyView(key: ScopedKeyListRow, owner: { organization: string | null; environment: string | null }): KeyView {
    return {
      id: key.id,
      prefix: key.prefix,
      organization: owner.organization,
      environment: owner.environment,
      createdAt: iso(key.createdAt),
      lastUsedAt: isoOrNull(key.lastUsedAt),
      revokedAt: isoOrNull(key.revokedAt),
    };
  }

  async listKeys(
    caller: ControlCaller,
    on: { organization: string } | { environment: string },
    page: ControlPage,
  ): Promise<{ items: KeyView[]; next: string | null }> {
    const owner = await this.keyScope(caller, on);
    const keys = await this.control.keys.list(owner.scope);
    return pageAfter(
      keys,
      (k) => k.id,
      page,
      (k) => this.keyView(k, owner),
    );
  }

  async createKey(
    caller: ControlCaller,
    on: { organization: string } | { environment: string },
  ): Promise<KeyView & { key: string }> {
    const owner = await this.keyScope(caller, on);
    const { key, row } = await createScopedKey(this.deps.store, owner.scope);
    return { ...this.keyView(row, owner), key };
  }

  async revokeKey(
    caller: ControlCaller,
    on: { organization: string } | { environment: string },
    id: string,
  ): Promise<KeyView> {
    const owner = await this.keyScope(caller, on);
    const key = await this.control.keys.byId(id);
    const ours =
      key !== null &&
      (owner.scope.organization !== undefined
        ? key.organization === owner.scope.organization
        : key.environment === owner.scope.environment);
    if (!key || !ours) throw new PublicError("key_not_found", `no key ${JSON.stringify(id)} here`);
    const at = Date.now();
    // Revoking a revoked key again changes nothing: its first revocation stands.
    const revokedAt = (await this.control.keys.revoke(key.id, at)) ? at : key.revokedAt;
    return this.keyView({ ...key, revokedAt }, owner);
  }

  // Grants.

  private async grantScope(
    caller: ControlCaller,
    on: { organization: string } | { environment: string },
  ): Promise<{ scope: Scope; organization: string; environment: string | null }> {
    refusePerson(caller);
    if ("organization" in on) {
      const org = await this.organizationSeen(caller, on.organization);
      return { scope: { organization: org.id }, organization: org.handle, environment: null };
    }
    const env = await this.environmentManaged(caller, on.environment, "manage grants");
    const orgs = await this.organizationHandles();
    const organization = env.organization === null ? undefined : orgs.get(env.organization);
    if (organization === undefined) {
      throw new PublicError(
        "invalid_request",
        `environment ${on.environment} belongs to no organization: grants are given within one`,
      );
    }
    return { scope: { environment: env.id }, organization, environment: on.environment };
  }

  private grantView(grant: GrantRow, owner: { organization: string; environment: string | null }): GrantView {
    return {
      user: grant.userId,
      organization: owner.organization,
      environment: owner.environment,
      createdAt: iso(grant.createdAt),
    };
  }

  async listGrants(
    caller: ControlCaller,
    on: { organization: string } | { environment: string },
    page: ControlPage,
  ): Promise<{ items: GrantView[]; next: string | null }> {
    const owner = await this.grantScope(caller, on);
    const filter =
      owner.scope.organization !== undefined
        ? { organization: owner.scope.organization, environment: 0 }
        : { environment: owner.scope.environment };
    const grants = await this.control.grants.list(filter);
    return pageAfter(
      grants,
      (g) => g.userId,
      page,
      (g) => this.grantView(g, owner),
    );
  }

  /** Grants `user` the scope; answers the grant and whether it was new. */
  async grant(
    caller: ControlCaller,
    on: { organization: string } | { environment: string },
    user: string,
  ): Promise<{ grant: GrantView; created: boolean }> {
    const owner = await this.grantScope(caller, on);
    const at = Date.now();
    const created = await this.control.grants.grant(user, owner.scope, at);
    const existing = created
      ? null
      : (await this.control.grants.list({ ...owner.scope, userId: user })).find(
          (g) => owner.scope.organization === undefined || g.environment === 0,
        );
    const grant = this.grantView({ userId: user, createdAt: existing?.createdAt ?? at } as GrantRow, owner);
    return { grant, created };
  }

  /** Takes the grant away; the person's tokens where nothing else grants them are revoked (GrantStore.revoke). */
  async revokeGrant(
    caller: ControlCaller,
    on: { organization: string } | { environment: string },
    user: string,
  ): Promise<{ user: string; organization: string; environment: string | null; revokedTokens: number }> {
    const owner = await this.grantScope(caller, on);
    const { revoked, tokens } = await this.control.grants.revoke(user, owner.scope, Date.now());
    if (!revoked) throw new PublicError("grant_not_found", `${user} has no such grant here`);
    return { user, organization: owner.organization, environment: owner.environment, revokedTokens: tokens };
  }

  // Variables (issue #44): an environment's own key, its organization's, or an operator's.

  /** The environment's variables as the caller may use them, and who the caller is in their listing. */
  private async variablesOf(
    caller: ControlCaller,
    handle: string,
  ): Promise<{ admin: VariableAdmin; as: { kind: "service"; id: string }; by: string }> {
    refusePerson(caller);
    const env = await this.environmentSeen(caller, handle);
    // As the environment's host names a stored key's principal (auth/scoped-keys.ts).
    const id = caller.kind === "operator" || caller.kind === "person" ? "operator" : `key-${caller.key ?? caller.kind}`;
    const admin = await variableAdminOver(this.deps.store.environment(env.id), this.deps.sealer ?? null);
    return { admin, as: { kind: "service", id }, by: `service:${id}` };
  }

  async listVariables(caller: ControlCaller, handle: string): Promise<VariableView[]> {
    const { admin, as } = await this.variablesOf(caller, handle);
    return admin.list(as);
  }

  async variable(caller: ControlCaller, handle: string, name: string): Promise<VariableView> {
    const { admin, as } = await this.variablesOf(caller, handle);
    return admin.get(as, name);
  }

  async setVariable(
    caller: ControlCaller,
    handle: string,
    name: string,
    change: { value: string; secret?: boolean },
  ): Promise<{ variable: VariableView; created: boolean }> {
    const { admin, as, by } = await this.variablesOf(caller, handle);
    return admin.set(as, name, change, by);
  }

  async unsetVariable(caller: ControlCaller, handle: string, name: string): Promise<void> {
    const { admin, as } = await this.variablesOf(caller, handle);
    await admin.unset(as, name);
  }

  // Previews: paused schedules, promote, forks (docs/decisions/previews.md).

  /**
   * An environment a preview operation acts on: the operator's, its organization key's, or its own
   * environment key's. Another environment's key is refused (403) whether that one exists or not.
   */
  private async environmentActedOn(caller: ControlCaller, handle: string, what: string): Promise<EnvironmentRow> {
    refusePerson(caller);
    if (caller.kind === "environment") {
      const env = await this.control.environments.byHandle(handle);
      if (!env || env.id !== caller.environment) throw denied(`${what} of another environment`);
      return env;
    }
    return this.environmentSeen(caller, handle);
  }

  /** Pauses or resumes the environment's schedules (resuming makes its next tick due now). */
  async patchEnvironment(
    caller: ControlCaller,
    handle: string,
    patch: { schedulesPaused?: boolean },
  ): Promise<EnvironmentView> {
    let env = await this.environmentActedOn(caller, handle, "change the schedules");
    if (patch.schedulesPaused !== undefined) {
      env = (await this.control.environments.setSchedulesPaused(env.id, patch.schedulesPaused, Date.now())) ?? env;
    }
    return this.environmentView(env, await this.organizationHandles());
  }

  /**
   * Publishes `from`'s active release to `to` and activates it, as `release promote` does: the caller
   * must act on both (the operator, or their organization's key; an environment key acts on one only).
   */
  async promote(
    caller: ControlCaller,
    to: string,
    from: string,
    force: boolean,
  ): Promise<PublishAnswer & { from: string; to: string }> {
    const target = await this.environmentActedOn(caller, to, "promote into the release");
    const source = await this.environmentActedOn(caller, from, "promote the release");
    if (!this.deps.bundlesDir) throw new Error("promote needs the process's bundles folder (ControlDeps.bundlesDir)");
    const result = await promoteRelease(this.deps.store, source, target, {
      bundlesDir: this.deps.bundlesDir,
      force,
      publishedBy: `${callerLabel(caller)} (promoted from ${from})`,
    });
    if (result.activated) await this.deps.changed?.();
    return { from, to, ...publishAnswer(result) };
  }

  /**
   * Forks `source` into a new environment (`env fork`): the source's own key, its organization's or the
   * operator may; in the source's organization unless `organization` names another the caller sees.
   * This instance learns of the fork at once (it serves it on its first request).
   */
  async fork(
    caller: ControlCaller,
    source: string,
    request: { handle: string; organization?: string; data?: boolean; secrets?: boolean; ttl?: string },
  ): Promise<EnvironmentView & { copied: ForkCopied }> {
    const from = await this.environmentActedOn(caller, source, "fork the environment");
    const ttlMs = request.ttl === undefined ? null : parseTtl(request.ttl);
    const organization = await this.forkOrganization(caller, from, request.organization);
    const { environment, copied } = await handled(
      forkEnvironment(this.deps.store, from, {
        handle: request.handle,
        organization: organization.id,
        data: request.data === true,
        secrets: request.secrets === true,
        ttlMs,
        at: Date.now(),
      }),
    );
    await this.deps.changed?.();
    return { ...this.environmentView(environment, new Map([[organization.id, organization.handle]])), copied };
  }

  /** The fork's organization: the source's, or another the caller may make environments in. */
  private async forkOrganization(
    caller: ControlCaller,
    source: EnvironmentRow,
    handle: string | undefined,
  ): Promise<OrganizationRow> {
    if (handle !== undefined) {
      if (caller.kind === "environment") throw denied("fork into another organization");
      return this.organizationSeen(caller, handle);
    }
    const own = source.organization === null ? null : await this.control.organizations.byId(source.organization);
    if (!own) {
      throw new PublicError(
        "invalid_request",
        `environment ${source.handle} belongs to no organization: name the fork's (organization)`,
      );
    }
    return own;
  }
}
