import type { ExecutionChanges, LoggedUpTo } from "../store/executions.ts";
import type { ExecutionRow } from "../store/rows.ts";

export type ExecutionEvent =
  | { type: "status"; execution: ExecutionRow }
  | { type: "log"; executionId: string; line: string; at: number; seq: number };

/** An execution whose status changed: with its row when this process changed it (no read needed). */
export interface ExecutionChange {
  id: string;
  row?: ExecutionRow;
}

/**
 * What a follower hears: an event of this process, that the stored row changed (to be read again), or
 * that lines up to `seq` are stored (to be read if it lacks them).
 */
export type FeedEvent =
  | ExecutionEvent
  | { type: "stored"; executionId: string }
  | { type: "logged"; executionId: string; seq: number };

/**
 * What happens to executions, per execution: status changes and `ctx.log` lines of those running in
 * this process, and word that another writer (another instance) changed an execution's stored row or
 * stored its lines.
 */
export class ExecutionFeed implements ExecutionChanges {
  private readonly listeners = new Map<string, Set<(event: FeedEvent) => void>>();
  /** Told of every status change, of any execution (live lists); empty unless someone watches a list. */
  private readonly watchers = new Set<(change: ExecutionChange) => void>();

  publish(executionId: string, event: FeedEvent): void {
    for (const listener of this.listeners.get(executionId) ?? []) listener(event);
    if (event.type === "status" && this.watchers.size > 0) {
      for (const watcher of this.watchers) watcher({ id: executionId, row: event.execution });
    }
  }

  /** The stored rows of these executions changed (the database says so); their followers read them again. */
  stored(executionIds: Iterable<string>): void {
    if (this.watchers.size > 0) {
      for (const id of executionIds) for (const watcher of this.watchers) watcher({ id });
    }
    // Every environment's engine hears every environment's changes (PostgreSQL's one channel): most follow none.
    if (this.listeners.size === 0) return;
    for (const executionId of executionIds) {
      if (this.listeners.has(executionId)) this.publish(executionId, { type: "stored", executionId });
    }
  }

  /** Executions another process made: new to the lists (their followers, if any, hear of them when they change). */
  madeElsewhere(executionIds: string[]): void {
    if (this.watchers.size === 0) return;
    for (const id of executionIds) for (const watcher of this.watchers) watcher({ id });
  }

  /** Lines of these executions were stored (by whichever instance runs them); their followers read those they lack. */
  logged(lines: LoggedUpTo[]): void {
    if (this.listeners.size === 0) return;
    for (const { executionId, seq } of lines) {
      if (this.listeners.has(executionId)) this.publish(executionId, { type: "logged", executionId, seq });
    }
  }

  /** Whether anyone follows this execution (so work done only for followers can be skipped). */
  watched(executionId: string): boolean {
    return this.listeners.has(executionId);
  }

  /**
   * A new execution of this process, told to the watchers once it is durable (`committed`): its followers
   * hear its changes, the lists its birth. Nothing to do when nobody watches (the invoke path's case).
   */
  created(row: ExecutionRow, committed: Promise<void> = Promise.resolve()): void {
    if (this.watchers.size === 0) return;
    committed.then(
      () => {
        for (const watcher of this.watchers) watcher({ id: row.id, row });
      },
      // A claim that did not commit was answered as failed: there is nothing to tell.
      () => {},
    );
  }

  /** Hears every execution whose status changed: the row when this process changed it, else its id alone. */
  watchAll(watcher: (change: ExecutionChange) => void): () => void {
    this.watchers.add(watcher);
    return () => this.watchers.delete(watcher);
  }

  subscribe(executionId: string, listener: (event: FeedEvent) => void): () => void {
    let set = this.listeners.get(executionId);
    if (!set) {
      set = new Set();
      this.listeners.set(executionId, set);
    }
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0) this.listeners.delete(executionId);
    };
  }
}
