import type { Config } from "../config.ts";
import { PublicError } from "../lib/errors.ts";
import { iso } from "../lib/values.ts";
import type { EnvironmentRow, OrganizationRow } from "../store/rows.ts";
import type { Store } from "../store/store.ts";
import { commandLine } from "./invocation.ts";
import { printTable } from "./token.ts";
import { withStore } from "./with-store.ts";

export const orgCreate = (config: Config, handle: string) =>
  withStore(config, async (store) => {
    const org = await store.control.organizations.create(handle, Date.now());
    console.log(`organization ${org.handle} created`);
    console.error(`add an environment: ${commandLine(`env create ${org.handle}-prod --org ${org.handle}`)}
a key that administers every environment of it: ${commandLine(`key create --org ${org.handle}`)}`);
    return 0;
  });

export const orgList = (config: Config) =>
  withStore(config, async (store) => {
    const orgs = await store.control.organizations.list();
    if (orgs.length === 0) {
      console.log(`no organizations yet; make one with ${commandLine("org create <handle>")}`);
      return 0;
    }
    const environments = await store.control.environments.list();
    const count = (org: OrganizationRow) => environments.filter((e) => e.organization === org.id).length;
    printTable([
      ["ORGANIZATION", "ENVIRONMENTS", "CREATED"],
      ...orgs.map((o) => [o.handle, String(count(o)), iso(o.createdAt)]),
    ]);
    return 0;
  });

export async function organizationNamed(store: Store, handle: string): Promise<OrganizationRow> {
  const org = await store.control.organizations.byHandle(handle);
  if (!org)
    throw new PublicError(
      "not_found",
      `no organization ${JSON.stringify(handle)}; ${commandLine("org list")} lists them`,
    );
  return org;
}

export async function environmentNamed(store: Store, handle: string): Promise<EnvironmentRow> {
  const env = await store.control.environments.byHandle(handle);
  if (!env)
    throw new PublicError(
      "not_found",
      `no environment ${JSON.stringify(handle)}; ${commandLine("env list")} lists them`,
    );
  return env;
}
