import type { EnvironmentDirectory, EnvironmentEntry } from "../../src/hosting/dispatcher.ts";
import { runStatement, selectRows } from "./databases.ts";

/**
 * Hosting mode's directory read straight from the `environments` and `organizations` tables, over a
 * connection of its own per lookup: what the tests run hosting mode with until the control store
 * (`store.control`) answers it. Handles reach it already checked as a DNS label (no quoting needed).
 */
export function tableDirectory(databaseUrl: string): EnvironmentDirectory {
  const byHandle = async (handle: string): Promise<EnvironmentEntry | null> => {
    const [row] = await selectRows(
      databaseUrl,
      `select e.id, e.handle, o.handle as organization from environments e
       left join organizations o on o.id = e.organization where e.handle = '${handle}'`,
    );
    if (!row) return null;
    return {
      id: Number(row.id),
      handle: String(row.handle),
      organization: (row.organization as string | null) ?? null,
    };
  };
  return {
    byHandle,
    async nameSingle(handle) {
      await runStatement(databaseUrl, `update environments set handle = '${handle}' where id = 1 and handle is null`);
      const [row] = await selectRows(databaseUrl, "select handle from environments where id = 1");
      return (await byHandle(String(row?.handle))) as EnvironmentEntry;
    },
  };
}

/** Makes environment `id` (and its organization, when named) with raw inserts, as the control store will. */
export async function insertEnvironment(
  databaseUrl: string,
  { id, handle, organization }: { id: number; handle: string; organization?: { id: number; handle: string } },
): Promise<void> {
  if (organization) {
    await runStatement(
      databaseUrl,
      `insert into organizations (id, handle, created_at) values (${organization.id}, '${organization.handle}', 0)`,
    );
  }
  await runStatement(
    databaseUrl,
    `insert into environments (id, handle, organization, revision, updated_at, created_at, changed)
     values (${id}, '${handle}', ${organization?.id ?? "null"}, 0, 0, 0, 0)`,
  );
}
