import type { EnvironmentEntry } from "../hosting/dispatcher.ts";
import type { ControlStore } from "../store/control.ts";
import type { EnvironmentRow } from "../store/rows.ts";
import type { EnvironmentRuntime } from "./environment.ts";

/**
 * The environments a hosting process has composed, by id: what the control API and the service loops
 * call on (docs/decisions/hosting-runtime.md).
 */
export interface EnvironmentRuntimes {
  /**
   * Environment `id`'s runtime, composed on first use; null for an environment that does not exist (any
   * more) or that this instance does not serve (SERVE_ENVIRONMENTS).
   */
  runtimeOf(id: number): Promise<EnvironmentRuntime | null>;
  /**
   * Ends environment `id` in this process (deleted): its live sockets closed, its running work stopped,
   * its app forgotten by the front door, so its next request asks the directory again (404 once its row
   * is gone). A no-op for one not composed here.
   */
  evict(id: number): Promise<void>;
}

export interface HostedEnvironmentsOptions {
  /** Makes an environment's runtime (started). */
  compose(entry: EnvironmentEntry): Promise<EnvironmentRuntime>;
  /** The environment of this id as the front door knows it, or null when there is none. */
  entryOf(id: number): Promise<EnvironmentEntry | null>;
  /** SERVE_ENVIRONMENTS. */
  serves(entry: EnvironmentEntry): boolean;
  /** The front door forgets the environment's app (Dispatcher.forget). */
  forget(handle: string): void;
  /** How long an evicted environment's handlers may run on before they are stopped. */
  graceMs: number;
}

/** Closed on eviction: the environment is gone; a client that reconnects is told so (404). */
export const EVICTED_CLOSE = { code: 4404, reason: "the environment was deleted" } as const;

/** Every composed runtime of a hosting process, each made once (concurrent first uses share one). */
export class HostedEnvironments implements EnvironmentRuntimes {
  private readonly composing = new Map<number, Promise<EnvironmentRuntime>>();
  private readonly composed = new Map<number, EnvironmentRuntime>();

  constructor(private readonly options: HostedEnvironmentsOptions) {}

  /** The runtimes composed now. */
  all(): EnvironmentRuntime[] {
    return [...this.composed.values()];
  }

  ids(): number[] {
    return [...this.composed.keys()];
  }

  has(id: number): boolean {
    return this.composed.has(id);
  }

  /** The runtime of an environment the front door found (served here): composed once. */
  open(entry: EnvironmentEntry): Promise<EnvironmentRuntime> {
    let runtime = this.composing.get(entry.id);
    if (!runtime) {
      runtime = this.options.compose(entry);
      this.composing.set(entry.id, runtime);
      runtime.then(
        (made) => this.composed.set(entry.id, made),
        // A failed start is tried again by the next use.
        () => this.composing.delete(entry.id),
      );
    }
    return runtime;
  }

  async runtimeOf(id: number): Promise<EnvironmentRuntime | null> {
    const known = this.composed.get(id) ?? this.composing.get(id);
    if (known) return known;
    const entry = await this.options.entryOf(id);
    if (entry === null || !this.options.serves(entry)) return null;
    return this.open(entry);
  }

  async evict(id: number): Promise<void> {
    const composing = this.composing.get(id);
    if (!composing) return;
    this.composing.delete(id);
    const runtime = await composing.catch(() => null);
    this.composed.delete(id);
    if (!runtime) return;
    this.options.forget(runtime.site.handle);
    runtime.halt();
    runtime.hub.closeAll(EVICTED_CLOSE.code, EVICTED_CLOSE.reason);
    await runtime.engine.shutdown(this.options.graceMs);
    await runtime.auth.close();
  }
}

/**
 * Environments' entries (with their organization's handle, for SERVE_ENVIRONMENTS' `org:` rules) from
 * their rows: the organizations' handles read once and kept (an organization is never renamed).
 */
export function environmentEntries({
  environments,
  organizations,
}: Pick<ControlStore, "environments" | "organizations">) {
  const handles = new Map<number, string>();
  const organizationOf = async (id: number | null): Promise<string | null> => {
    if (id === null) return null;
    if (!handles.has(id)) for (const row of await organizations.list()) handles.set(row.id, row.handle);
    return handles.get(id) ?? null;
  };
  const ofRow = async (row: EnvironmentRow): Promise<EnvironmentEntry> => ({
    id: row.id,
    handle: row.handle as string,
    organization: await organizationOf(row.organization),
  });
  return {
    ofRow,
    async byId(id: number): Promise<EnvironmentEntry | null> {
      const row = await environments.byId(id);
      return row === null || row.handle === null ? null : ofRow(row);
    },
  };
}
