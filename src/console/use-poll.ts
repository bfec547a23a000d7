import { useEffect, useState } from "preact/hooks";

export type Loaded<T> = { data: T | null; error: string | null };

/**
 * Loads now and every `everyMs` while `keepPolling(data)` holds; a page that is left stops polling.
 * `everyMs` may be a function of how long the last load took (ms), to wait longer after a slow one.
 */
export function usePoll<T>(
  load: () => Promise<T>,
  deps: unknown[],
  everyMs: number | ((tookMs: number) => number),
  keepPolling: (data: T) => boolean = () => true,
): Loaded<T> {
  const [state, setState] = useState<Loaded<T>>({ data: null, error: null });
  // The caller names what `load` reads in `deps`, as with useEffect.
  const poll = () => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const tick = async () => {
      let again = true;
      const started = performance.now();
      try {
        const data = await load();
        if (stopped) return;
        setState({ data, error: null });
        again = keepPolling(data);
      } catch (error) {
        if (stopped) return;
        setState((s) => ({ data: s.data, error: (error as Error).message }));
      }
      const took = performance.now() - started;
      if (again && !stopped) timer = setTimeout(tick, typeof everyMs === "number" ? everyMs : everyMs(took));
    };
    setState({ data: null, error: null });
    tick();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  };
  // biome-ignore lint/correctness/useExhaustiveDependencies: the caller lists what `load` reads, as with useEffect
  useEffect(poll, deps);
  return state;
}
