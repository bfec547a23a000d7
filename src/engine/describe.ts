import type { LoadedRelease } from "../release/load.ts";
import type { Principal } from "../sdk/index.ts";
import { mayKnow } from "./access.ts";

/** What the `describe` tool and the `service://<handle>/schema` resource answer: the release as this caller may know it. */
export function describeRelease(handle: string, release: LoadedRelease | null, principal: Principal) {
  const actions = release
    ? [...release.actions.values()].filter((a) => mayKnow(a, principal)).map((a) => a.contract)
    : [];
  return {
    handle,
    release: release ? { version: release.version, description: release.manifest.description } : null,
    domains: [...new Set(actions.map((a) => a.name.split(".")[0] ?? ""))].sort(),
    entities: release?.manifest.schema.entities ?? {},
    links: release?.manifest.schema.links ?? {},
    actions: actions.map(({ name, kind, description, access, input, output, contractHash, files }) => ({
      name,
      kind,
      description,
      access,
      input,
      output,
      contractHash,
      files,
    })),
    // Schedules name actions and inputs a user may not know of: service keys see them (as GET /schedules).
    ...(principal.kind === "service" && release?.manifest.schedules ? { schedules: release.manifest.schedules } : {}),
  };
}
