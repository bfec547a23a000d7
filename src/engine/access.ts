import type { DataService } from "../data/service.ts";
import { messageOf } from "../lib/errors.ts";
import type { Log } from "../observe/log.ts";
import type { LoadedAction, LoadedRelease } from "../release/load.ts";
import type { AccessContext, Principal } from "../sdk/index.ts";

/**
 * Whether the caller may know of the action (lists, contracts, tools). An action for service keys is
 * hidden from everyone else; one with a rule is shown, since the rule is only asked when it is run.
 */
export const mayKnow = (action: LoadedAction, principal: Principal) =>
  principal.kind === "service" || action.contract.access !== "service";

export interface AccessCheck {
  data: DataService;
  log: Log;
}

/**
 * Whether `principal` may run `action`. Service keys act as administrators and pass every rule. The
 * default answers synchronously, so the common path costs no await; a rule that throws refuses, and
 * the throw is logged for the action's author.
 */
export function mayRun(
  $: AccessCheck,
  release: LoadedRelease,
  action: LoadedAction,
  principal: Principal,
): boolean | Promise<boolean> {
  if (principal.kind === "service") return true;
  const rule = action.definition.access;
  if (rule === undefined || rule === "authenticated") return true;
  if (rule === "service") return false;
  const db: AccessContext["db"] = {
    query: (query) => $.data.query(principal, release, query, "objects") as Promise<Record<string, unknown[]>>,
  };
  return (async () => {
    try {
      return (await rule({ auth: principal, db })) === true;
    } catch (error) {
      $.log(
        `access rule of ${action.contract.name} threw for ${principal.kind} ${principal.id}; refused: ${messageOf(error)}`,
        { level: "warn", action: action.contract.name },
      );
      return false;
    }
  })();
}
