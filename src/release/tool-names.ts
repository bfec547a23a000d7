import { ReleaseError } from "./errors.ts";

/** What many LLM APIs accept as a tool name (no dots), and so what an MCP alias must be. */
export const TOOL_NAME_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/;

/** Tools every environment lists beside its actions: no action may be published under their names. */
export const BUILTIN_TOOL_NAMES: readonly string[] = ["query", "describe"];

/** How an environment names its action tools over MCP (`MCP_TOOL_NAMES`). */
export type ToolNaming = "dotted" | "underscore";

/** `notes.add` → `notes_add`: the name `MCP_TOOL_NAMES=underscore` publishes for an action without an alias. */
export const underscoreName = (action: string) => action.replace(".", "_");

/** The tool name of an action under `naming`: its alias when it has one, else its own (or underscored) name. */
export function toolName(action: { name: string; mcpName: string | null }, naming: ToolNaming): string {
  if (action.mcpName !== null) return action.mcpName;
  return naming === "underscore" ? underscoreName(action.name) : action.name;
}

/** Reads `mcp: { name }` of a definition; null when it sets none. */
export function mcpAlias(where: string, mcp: unknown): string | null {
  if (mcp === undefined) return null;
  if (typeof mcp !== "object" || mcp === null || Array.isArray(mcp)) {
    throw new ReleaseError(`${where}: mcp must be an object such as { name: "notes_add" }`);
  }
  const { name } = mcp as { name?: unknown };
  if (name === undefined) return null;
  if (typeof name !== "string" || !TOOL_NAME_PATTERN.test(name)) {
    throw new ReleaseError(
      `${where}: mcp.name ${JSON.stringify(name)} is not a valid tool name: use 1 to 64 letters, digits, _ or -`,
    );
  }
  return name;
}

/**
 * Refuses a release in which two tools would share a name under either naming: an alias that is another
 * action's name, alias or underscored name, or a built-in tool's. Checked for both namings, so switching
 * `MCP_TOOL_NAMES` can never make a published release ambiguous.
 */
export function checkToolNames(actions: Iterable<{ name: string; mcpName: string | null }>): void {
  for (const naming of ["dotted", "underscore"] as const) {
    const owners = new Map<string, string>(BUILTIN_TOOL_NAMES.map((name) => [name, `the built-in ${name} tool`]));
    for (const action of actions) {
      const name = toolName(action, naming);
      const owner = owners.get(name);
      if (owner !== undefined) {
        const how = action.mcpName === null ? `its ${naming} tool name` : "its mcp.name";
        throw new ReleaseError(
          `${action.name}: ${how} "${name}" is already taken by ${owner}; give it a unique mcp: { name }`,
        );
      }
      owners.set(name, action.name);
    }
  }
}
