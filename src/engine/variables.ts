import { loggable } from "../lib/database-errors.ts";
import { PublicError } from "../lib/errors.ts";
import { iso } from "../lib/values.ts";
import type { Log } from "../observe/log.ts";
import type { LoadedRelease } from "../release/load.ts";
import type { Principal } from "../sdk/index.ts";
import type { Store } from "../store/store.ts";
import type { VariableRow } from "../store/variables.ts";
import { defaultsOf, type VariableDeclarations } from "../variables/declarations.ts";
import { checkVariableName, checkVariableValue } from "../variables/names.ts";
import type { Sealer } from "../variables/sealing.ts";
import type { VariableView } from "../wire/views.ts";
import { NO_VARIABLES, type SecretValue, type VariableSnapshot } from "./variable-snapshot.ts";

export type { VariableView };

export interface VariableAdminParts {
  /** The environment's view of the store. */
  store: Store;
  /** Null: no SECRETS_KEY (setting a secret is refused). */
  sealer: Sealer | null;
  /** The active release (its declarations). */
  release: () => LoadedRelease | null;
  /** This process's variables read again now (others follow on their next poll). */
  changed: () => Promise<void>;
  now?: () => number;
}

const serviceOnly = (principal: Principal) => {
  if (principal.kind !== "service") throw new PublicError("access_denied", "variables are for service keys");
};

export const variableNotFound = (name: string) =>
  new PublicError("variable_not_found", `no variable ${name} is set in this environment`, { name });

export const secretsKeyRequired = () =>
  new PublicError(
    "secrets_key_required",
    "this server has no SECRETS_KEY to seal secrets with: set SECRETS_KEY (32 bytes, base64 or hex: `openssl rand -base64 32`) on every instance and restart",
  );

/**
 * Setting, listing and unsetting an environment's variables and secrets: what `actuate vars`, the
 * `/variables` routes and the console do, for service keys only (a variable is the operator's, as a
 * release is). A secret is sealed before it is stored and never answered.
 */
export class VariableAdmin {
  constructor(private readonly $: VariableAdminParts) {}

  /** The set variables, and the names the active release declares that are not set (`set: false`), by name. */
  async list(principal: Principal): Promise<VariableView[]> {
    serviceOnly(principal);
    const declared = this.declared();
    const rows = await this.$.store.variables.list();
    const views = rows.map((row) => viewOf(row, declared));
    const set = new Set(rows.map((row) => row.name));
    for (const [name, d] of Object.entries(declared)) {
      if (set.has(name)) continue;
      views.push({
        name,
        secret: d.secret,
        updatedAt: null,
        updatedBy: null,
        declared: true,
        required: d.default === undefined,
        set: false,
      });
    }
    return views.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /** One variable (set, or declared by the active release); variable_not_found otherwise. */
  async get(principal: Principal, name: string): Promise<VariableView> {
    serviceOnly(principal);
    checkVariableName(name);
    const found = (await this.list(principal)).find((view) => view.name === name);
    if (!found) throw variableNotFound(name);
    return found;
  }

  /**
   * Sets (creates or replaces) a variable. A secret is sealed under SECRETS_KEY (secrets_key_required
   * without one); a name the active release declares a secret cannot be set as a plain variable. Without
   * `secret`, it stays what it is (or what the release declares), so a secret replaced without saying so
   * stays one; a new name is plain.
   */
  async set(
    principal: Principal,
    name: string,
    given: { value: string; secret?: boolean },
    by: string,
  ): Promise<{ variable: VariableView; created: boolean }> {
    serviceOnly(principal);
    checkVariableName(name);
    const declared = this.declared();
    const secret = given.secret ?? (await this.$.store.variables.get(name))?.secret ?? declared[name]?.secret ?? false;
    const value = checkVariableValue(name, given.value, secret);
    if (!secret && declared[name]?.secret) {
      throw new PublicError(
        "invalid_variable",
        `the active release declares ${name} a secret: set it as one (--secret, "secret": true)`,
        { name },
      );
    }
    let stored = value;
    let keyId: string | null = null;
    if (secret) {
      const { sealer } = this.$;
      if (!sealer) throw secretsKeyRequired();
      stored = await sealer.seal(name, value);
      keyId = sealer.keyId;
    }
    const row: VariableRow = {
      name,
      secret,
      value: stored,
      keyId,
      updatedAt: (this.$.now ?? Date.now)(),
      updatedBy: by,
    };
    const { created } = await this.$.store.variables.set(row);
    await this.$.changed();
    return { variable: viewOf(row, declared), created };
  }

  /** Unsets a variable (a declared default applies again); variable_not_found when it is not set. */
  async unset(principal: Principal, name: string): Promise<void> {
    serviceOnly(principal);
    checkVariableName(name);
    if (!(await this.$.store.variables.unset(name))) throw variableNotFound(name);
    await this.$.changed();
  }

  private declared(): VariableDeclarations {
    return this.$.release()?.env ?? {};
  }
}

function viewOf(row: VariableRow, declared: VariableDeclarations): VariableView {
  const declaration = declared[row.name];
  return {
    name: row.name,
    secret: row.secret,
    ...(row.secret ? {} : { value: row.value }),
    updatedAt: iso(row.updatedAt),
    updatedBy: row.updatedBy,
    declared: declaration !== undefined,
    required: declaration !== undefined && declaration.default === undefined,
    set: true,
  };
}

/**
 * The environment's variables as this process gives them to invocations: its set values (secrets
 * opened) over the active release's defaults, read again whenever the environment's revision changes (an
 * activation, a variable set or unset anywhere) before the release registry swaps to it. An invocation
 * reads `snapshot()` once when it starts.
 */
export class EnvironmentVariables {
  private current: VariableSnapshot = NO_VARIABLES;
  /** Reads are numbered, so a slow one never replaces what a later one read. */
  private reads = 0;
  private applied = 0;

  constructor(private readonly $: { store: Store; sealer: Sealer | null; log: Log }) {}

  snapshot(): VariableSnapshot {
    return this.current;
  }

  /** Reads the variables for `release` (its defaults) now; a secret that does not open is left out, and logged. */
  async refresh(release: LoadedRelease | null): Promise<void> {
    const read = ++this.reads;
    const rows = await this.$.store.variables.list();
    const snapshot = await this.snapshotOf(rows, release?.env);
    if (read < this.applied) return;
    this.applied = read;
    this.current = snapshot;
  }

  private async snapshotOf(rows: VariableRow[], declared: VariableDeclarations | undefined): Promise<VariableSnapshot> {
    const defaults = defaultsOf(declared);
    if (rows.length === 0 && Object.keys(defaults).length === 0) return NO_VARIABLES;
    const env: Record<string, string> = { ...defaults };
    const secrets: SecretValue[] = [];
    for (const row of rows) {
      if (!row.secret) {
        env[row.name] = row.value;
        continue;
      }
      const value = await this.open(row);
      if (value === null) {
        delete env[row.name];
        continue;
      }
      env[row.name] = value;
      secrets.push(Object.freeze({ name: row.name, value }));
    }
    return Object.freeze({ env: Object.freeze(env), secrets: Object.freeze(secrets) });
  }

  private async open(row: VariableRow): Promise<string | null> {
    const { sealer, log } = this.$;
    if (!sealer) {
      log(`secret ${row.name} is not given to handlers: this server has no SECRETS_KEY`, { level: "error" });
      return null;
    }
    try {
      return await sealer.open(row.name, row.value);
    } catch (error) {
      log(`secret ${row.name} is not given to handlers: ${loggable(error)}`, { level: "error" });
      return null;
    }
  }
}
