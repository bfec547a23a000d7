import type { ControlStore } from "../store/control.ts";
import type { EnvironmentRow } from "../store/rows.ts";
import type { EnvironmentDirectory, EnvironmentEntry } from "./dispatcher.ts";

/** The front door's directory over the control store: environments by handle, with their organization's handle. */
export function controlDirectory({
  environments,
  organizations,
}: Pick<ControlStore, "environments" | "organizations">): EnvironmentDirectory {
  const entryOf = async (row: EnvironmentRow): Promise<EnvironmentEntry> => {
    const organization = row.organization === null ? null : await organizations.byId(row.organization);
    return { id: row.id, handle: row.handle as string, organization: organization?.handle ?? null };
  };
  return {
    async byHandle(handle) {
      const row = await environments.byHandle(handle);
      return row === null ? null : entryOf(row);
    },
    async nameSingle(handle) {
      return entryOf(await environments.nameSingle(handle));
    },
  };
}
