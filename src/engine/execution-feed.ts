import type { ExecutionRow } from "../store/types.ts";

export type ExecutionEvent =
  | { type: "status"; execution: ExecutionRow }
  | { type: "log"; executionId: string; line: string; at: number };

/** What happens to executions running in this process: status changes and `ctx.log` lines, per execution. */
export class ExecutionFeed {
  private readonly listeners = new Map<string, Set<(event: ExecutionEvent) => void>>();

  publish(executionId: string, event: ExecutionEvent): void {
    for (const listener of this.listeners.get(executionId) ?? []) listener(event);
  }

  /** Whether anyone follows this execution (so work done only for followers can be skipped). */
  watched(executionId: string): boolean {
    return this.listeners.has(executionId);
  }

  subscribe(executionId: string, listener: (event: ExecutionEvent) => void): () => void {
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
