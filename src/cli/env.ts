import { USER_ID, UserError } from "../auth/users.ts";
import type { Config } from "../config.ts";
import { deleteEnvironment, refuseDeletingFirst } from "../engine/control/delete-environment.ts";
import { forkEnvironment } from "../engine/control/fork.ts";
import { parseTtl } from "../engine/control/ttl.ts";
import { iso } from "../lib/values.ts";
import { openConfiguredStorage } from "../startup.ts";
import type { EnvironmentContents, Scope } from "../store/control.ts";
import type { Store } from "../store/store.ts";
import { commandLine } from "./invocation.ts";
import { environmentNamed, organizationNamed } from "./org.ts";
import { printTable } from "./token.ts";
import { withStore } from "./with-store.ts";

export const envCreate = (config: Config, handle: string, org: string) =>
  withStore(config, async (store) => {
    const organization = await organizationNamed(store, org);
    const env = await store.control.environments.create(handle, organization.id, Date.now());
    console.log(`environment ${env.handle} created in ${organization.handle}`);
    console.error(`a key to deploy to it (CI): ${commandLine(`key create --env ${env.handle}`)}
let a person use it: ${commandLine(`env grant ${env.handle} <user>`)}`);
    return 0;
  });

export const envList = (config: Config, org: string | undefined) =>
  withStore(config, async (store) => {
    const organization = org === undefined ? undefined : await organizationNamed(store, org);
    const environments = await store.control.environments.list(organization?.id);
    if (environments.length === 0) {
      console.log(`no environments yet; make one with ${commandLine("env create <handle> --org <org>")}`);
      return 0;
    }
    const orgs = new Map((await store.control.organizations.list()).map((o) => [o.id, o.handle]));
    printTable([
      ["ENVIRONMENT", "ORGANIZATION", "ACTIVE", "CREATED", "FORKED FROM", "EXPIRES", "SCHEDULES"],
      ...environments.map((e) => [
        e.handle ?? "(single mode)",
        e.organization === null ? "-" : (orgs.get(e.organization) ?? "-"),
        e.activeVersion ?? "-",
        iso(e.createdAt),
        e.forkedFrom ?? "-",
        e.expiresAt === null ? "-" : iso(e.expiresAt),
        e.schedulesPaused ? "paused" : "on",
      ]),
    ]);
    return 0;
  });

const WHAT: Record<keyof EnvironmentContents, string> = {
  executions: "executions",
  executionLogs: "execution log lines",
  workflowRuns: "workflow runs",
  workflowSteps: "workflow steps",
  scheduledInvocations: "delayed invocations",
  scheduleTicks: "schedule positions",
  dataEntities: "entities",
  dataLinks: "links",
  dataAttrs: "attribute ids",
  files: "files",
  releases: "releases",
  apiTokens: "user tokens",
  grants: "grants",
  scopedKeys: "environment keys",
  variables: "variables and secrets",
};

function printContents(contents: EnvironmentContents) {
  const rows = Object.entries(contents).filter(([, n]) => n > 0);
  if (rows.length === 0) console.log("  no rows");
  for (const [name, n] of rows) console.log(`  ${String(n).padStart(9)}  ${WHAT[name as keyof EnvironmentContents]}`);
}

/**
 * Without --yes, says what deleting would remove and exits 1 (a script that forgot --yes must not go on
 * as if it were gone). With it, removes the environment's rows, a batch at a time.
 */
export const envDelete = (config: Config, handle: string, options: { yes: boolean }) =>
  withStore(config, async (store) => {
    const env = await environmentNamed(store, handle);
    refuseDeletingFirst(env.id, handle);
    if (!options.yes) {
      const contents = await store.control.environments.describeDelete(env.id);
      if (!contents) throw new UserError(`environment ${handle} was deleted meanwhile`);
      console.log(`deleting environment ${handle} would remove its row and:`);
      printContents(contents);
      console.error(`nothing was deleted; to delete it: ${commandLine(`env delete ${handle} --yes`)}`);
      return 1;
    }
    const removed = await deleteEnvironment(store, await openConfiguredStorage(config), env.id);
    if (!removed) throw new UserError(`environment ${handle} was deleted meanwhile`);
    console.log(`deleted environment ${handle}, with:`);
    printContents(removed);
    return 0;
  });

/** The grant a command names: an environment (`<env> <user>`) or every environment of `--org`. */
async function grantTarget(
  store: Store,
  args: string[],
  org: string | undefined,
): Promise<{ user: string; scope: Scope; what: string }> {
  const [first, second] = args as [string, string | undefined];
  if (org !== undefined) {
    if (second !== undefined) throw new UserError("give an environment or --org <org>, not both");
    const organization = await organizationNamed(store, org);
    return { user: checkUser(first), scope: { organization: organization.id }, what: `every environment of ${org}` };
  }
  if (second === undefined) throw new UserError("give the environment and the user, or --org <org> and the user");
  const env = await environmentNamed(store, first);
  return { user: checkUser(second), scope: { environment: env.id }, what: `environment ${first}` };
}

function checkUser(user: string): string {
  if (!USER_ID.test(user)) throw new UserError("a user id is letters, digits and . _ @ : - (at most 128)");
  return user;
}

export const envGrant = (config: Config, args: string[], org: string | undefined) =>
  withStore(config, async (store) => {
    const { user, scope, what } = await grantTarget(store, args, org);
    const made = await store.control.grants.grant(user, scope, Date.now());
    console.log(made ? `${user} may now use ${what}` : `${user} was already granted ${what}`);
    return 0;
  });

export const envRevoke = (config: Config, args: string[], org: string | undefined) =>
  withStore(config, async (store) => {
    const { user, scope, what } = await grantTarget(store, args, org);
    const { revoked, tokens } = await store.control.grants.revoke(user, scope, Date.now());
    if (!revoked) {
      console.log(`${user} had no grant of ${what}`);
      return 1;
    }
    const ended = tokens > 0 ? `; ${tokens} of their tokens revoked` : "";
    console.log(`${user} no longer granted ${what}${ended}`);
    return 0;
  });

export const envGrants = (config: Config, environment: string | undefined, org: string | undefined) =>
  withStore(config, async (store) => {
    const filter =
      environment !== undefined
        ? { environment: (await environmentNamed(store, environment)).id }
        : org !== undefined
          ? { organization: (await organizationNamed(store, org)).id }
          : {};
    const grants = await store.control.grants.list(filter);
    if (grants.length === 0) {
      console.log(`no grants; make one with ${commandLine("env grant <environment> <user>")}`);
      return 0;
    }
    const orgs = new Map((await store.control.organizations.list()).map((o) => [o.id, o.handle]));
    const envs = new Map((await store.control.environments.list()).map((e) => [e.id, e.handle]));
    printTable([
      ["USER", "ORGANIZATION", "ENVIRONMENT", "GRANTED"],
      ...grants.map((g) => [
        g.userId,
        orgs.get(g.organization) ?? "-",
        g.environment === 0 ? "*" : (envs.get(g.environment) ?? "-"),
        iso(g.createdAt),
      ]),
    ]);
    return 0;
  });

/** Pauses or resumes an environment's schedules (resuming: its next tick is due at once, catch-up rules apply). */
export const envSchedules = (config: Config, handle: string, options: { pause: boolean; resume: boolean }) =>
  withStore(config, async (store) => {
    if (options.pause === options.resume) throw new UserError("give --pause or --resume");
    const env = await environmentNamed(store, handle);
    await store.control.environments.setSchedulesPaused(env.id, options.pause, Date.now());
    console.log(
      options.pause
        ? `schedules of ${handle} paused: no tick runs until ${commandLine(`env schedules ${handle} --resume`)}`
        : `schedules of ${handle} resumed: the next tick is due now (missed ticks follow each schedule's catchUp)`,
    );
    return 0;
  });

/**
 * Forks an environment (hosting mode): a new one with the source's active release and history, its
 * variables (secrets with --secrets), with --data its entities, links and files; schedules paused.
 */
export const envFork = (
  config: Config,
  source: string,
  handle: string,
  options: { data: boolean; secrets: boolean; ttl?: string; org?: string },
) =>
  withStore(config, async (store) => {
    const from = await environmentNamed(store, source);
    const ttlMs = options.ttl === undefined ? null : parseTtl(options.ttl);
    const organization =
      options.org !== undefined
        ? await organizationNamed(store, options.org)
        : from.organization === null
          ? null
          : await store.control.organizations.byId(from.organization);
    if (!organization) throw new UserError(`environment ${source} belongs to no organization: give --org <org>`);
    const started = performance.now();
    const { environment, copied } = await forkEnvironment(store, from, {
      handle,
      organization: organization.id,
      data: options.data,
      secrets: options.secrets,
      ttlMs,
      at: Date.now(),
    });
    const ms = Math.round(performance.now() - started);
    const version = environment.activeVersion ?? "no release";
    console.log(`environment ${handle} forked from ${source} in ${organization.handle} (${version}) in ${ms} ms:`);
    console.log(
      `  ${copied.releases} releases, ${copied.variables} variables${options.data ? `, ${copied.entities} entities, ${copied.links} links, ${copied.files} files` : " (no data: --data copies it)"}`,
    );
    if (environment.expiresAt !== null) console.log(`  deleted by the service at ${iso(environment.expiresAt)}`);
    console.log(`  schedules paused: ${commandLine(`env schedules ${handle} --resume`)} lets them tick`);
    console.error(`it is served now, with keys of its own (the source's do not open it): ${commandLine(`key create --env ${handle}`)}
promote its release back later: ${commandLine(`release promote ${handle} ${source}`)}`);
    return 0;
  });
