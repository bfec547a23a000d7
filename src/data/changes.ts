import type { DataStore } from "../store/data.ts";

/**
 * Committed data changes, by entity name. Live queries listen here and re-run only the subscriptions
 * that read a touched entity. Changes committed here are relayed to the other instances sharing the
 * database (PostgreSQL LISTEN/NOTIFY), and theirs arrive here.
 */
export class ChangeFeed {
  private readonly listeners = new Set<(entities: ReadonlySet<string>) => void>();

  constructor(private readonly store: DataStore) {}

  /** Starts hearing other instances' changes (a server calls this once; the CLI never does). */
  relay(): Promise<void> {
    return this.store.listenChanges((entities) => this.deliver(entities));
  }

  publish(entities: Iterable<string>): void {
    const touched = [...new Set(entities)];
    if (touched.length === 0) return;
    this.deliver(touched);
    this.store.notifyChange(touched).catch(() => {
      // Other instances miss this refresh; their next one (or a re-subscription) catches up.
    });
  }

  private deliver(entities: Iterable<string>) {
    const touched = new Set(entities);
    for (const listener of this.listeners) listener(touched);
  }

  subscribe(listener: (entities: ReadonlySet<string>) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
