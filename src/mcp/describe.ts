import type { LoadedRelease } from "../release/load.ts";

/** What the `describe` tool and the `service://<handle>/schema` resource answer. */
export function describeRelease(handle: string, release: LoadedRelease | null) {
  const actions = release ? [...release.actions.values()].map((a) => a.contract) : [];
  return {
    handle,
    release: release ? { version: release.version, description: release.manifest.description } : null,
    domains: [...new Set(actions.map((a) => a.name.split(".")[0] ?? ""))].sort(),
    entities: release?.manifest.schema.entities ?? {},
    links: release?.manifest.schema.links ?? {},
    actions: actions.map(({ name, kind, description, input, output, contractHash, files }) => ({
      name,
      kind,
      description,
      input,
      output,
      contractHash,
      files,
    })),
  };
}
