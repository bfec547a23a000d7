import { VARIABLE_NAME } from "./names.ts";

/** A variable a release declares, as its manifest keeps it: one without `default` is required. */
export interface VariableDeclaration {
  secret: boolean;
  default?: string;
  description?: string;
}

export type VariableDeclarations = Record<string, VariableDeclaration>;

/**
 * A release's `env` as `defineRelease` was given it, checked: valid names, a default is a string, a secret
 * has none (it would sit in the bundle in plaintext). Answers the manifest's form, or the problems.
 */
export function compileDeclarations(env: unknown): { declarations: VariableDeclarations } | { problems: string[] } {
  if (env === undefined) return { declarations: {} };
  if (typeof env !== "object" || env === null || Array.isArray(env)) {
    return {
      problems: ["env must be an object: { NAME: { secret?: boolean, default?: string, description?: string } }"],
    };
  }
  const problems: string[] = [];
  const declarations: VariableDeclarations = {};
  for (const [name, given] of Object.entries(env)) {
    if (!VARIABLE_NAME.test(name)) {
      problems.push(`env.${name}: a variable name is capital letters, digits and _ (not first a digit), at most 128`);
      continue;
    }
    if (typeof given !== "object" || given === null || Array.isArray(given)) {
      problems.push(`env.${name} must be an object ({} for a required plain variable)`);
      continue;
    }
    const { secret = false, default: value, description, ...rest } = given as Record<string, unknown>;
    const unknown = Object.keys(rest);
    if (unknown.length > 0) problems.push(`env.${name}: unknown ${unknown.join(", ")} (secret, default, description)`);
    if (typeof secret !== "boolean") problems.push(`env.${name}.secret must be true or false`);
    if (value !== undefined && typeof value !== "string") problems.push(`env.${name}.default must be a string`);
    if (secret === true && value !== undefined) {
      problems.push(`env.${name}: a secret has no default (it would be in the bundle in plain text)`);
    }
    if (description !== undefined && typeof description !== "string") {
      problems.push(`env.${name}.description must be a string`);
    }
    declarations[name] = {
      secret: secret === true,
      ...(typeof value === "string" ? { default: value } : {}),
      ...(typeof description === "string" ? { description } : {}),
    };
  }
  return problems.length > 0 ? { problems } : { declarations };
}

/** The names declared without a default, by name. */
export function requiredNames(declared: VariableDeclarations | undefined): string[] {
  return Object.entries(declared ?? {})
    .filter(([, d]) => d.default === undefined)
    .map(([name]) => name)
    .sort();
}

/** The names declared secret, by name. */
export function secretNames(declared: VariableDeclarations | undefined): string[] {
  return Object.entries(declared ?? {})
    .filter(([, d]) => d.secret)
    .map(([name]) => name)
    .sort();
}

/** The declared defaults, by name. */
export function defaultsOf(declared: VariableDeclarations | undefined): Record<string, string> {
  const defaults: Record<string, string> = {};
  for (const [name, d] of Object.entries(declared ?? {})) if (d.default !== undefined) defaults[name] = d.default;
  return defaults;
}

/** The required names that are not set. */
export function missing(declared: VariableDeclarations | undefined, setNames: Iterable<string>): string[] {
  const set = new Set(setNames);
  return requiredNames(declared).filter((name) => !set.has(name));
}

/**
 * What the refusal of a release whose required variables are unset says: each name, and the command that
 * sets it (`handle` null: single mode, where the environment is left out).
 */
export function missingMessage(
  version: string,
  names: string[],
  declared: VariableDeclarations,
  handle: string | null,
): string {
  const where = handle === null ? "" : ` in ${handle}`;
  const command = (name: string) =>
    `actuate vars set ${handle === null ? "" : `${handle} `}${name}${declared[name]?.secret ? " --secret" : ""}`;
  return [
    `release ${version} needs variables that are not set${where}: ${names.join(", ")}. Set them (the value is read from stdin):`,
    ...names.map((name) => `  ${command(name)}`),
  ].join("\n");
}
