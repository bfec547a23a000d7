/**
 * Committed data changes, by entity name. Live queries listen here and re-run only the subscriptions
 * that read a touched entity. In-process for now; instances sharing PostgreSQL will relay it over
 * LISTEN/NOTIFY.
 */
export class ChangeFeed {
  private readonly listeners = new Set<(entities: ReadonlySet<string>) => void>();

  publish(entities: Iterable<string>): void {
    const touched = new Set(entities);
    if (touched.size === 0) return;
    for (const listener of this.listeners) listener(touched);
  }

  subscribe(listener: (entities: ReadonlySet<string>) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
