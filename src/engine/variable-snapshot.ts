/** A secret's name and plaintext, as the process holds it to give `ctx.env` and to redact it. */
export interface SecretValue {
  readonly name: string;
  readonly value: string;
}

/**
 * An environment's variables as an invocation sees them: read once when the invocation starts and kept
 * until it ends, as the release is (a change reaches the next invocation).
 */
export interface VariableSnapshot {
  /** What `ctx.env` holds: the set values, then the release's defaults for the rest. */
  readonly env: Readonly<Record<string, string>>;
  /** The secrets among them (empty when the environment has none: nothing is scanned then). */
  readonly secrets: readonly SecretValue[];
}

export const NO_VARIABLES: VariableSnapshot = Object.freeze({
  env: Object.freeze({}),
  secrets: Object.freeze([]) as readonly SecretValue[],
});
