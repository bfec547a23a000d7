import { useEffect, useRef, useState } from "preact/hooks";
import { ActuateError } from "../client/index.ts";

export type Loaded<T> = { data: T | null; error: string | null };

/** A load, with what the page does after a failure: try again by itself (`againInMs`) or wait for `retry`. */
export type Polled<T> = Loaded<T> & { againInMs: number | null; retry: () => void };

// After a failure that may pass, the pause starts here (the client has already retried a read for a
// couple of seconds) and doubles up to the cap; never shorter than the page's own interval.
const FIRST_PAUSE_MS = 5_000;
const MAX_PAUSE_MS = 30_000;

/**
 * A refusal (4xx) is the same answer however often it is asked: access, a missing action or run, a where
 * the server does not take. A timeout (408), too many requests (429), a 5xx or no answer may pass.
 */
const passes = (error: unknown) =>
  !(error instanceof ActuateError) || error.status < 400 || error.status >= 500 || [408, 429].includes(error.status);

/** The pause before the `failures`th try again: doubling from 5 s to 30 s, or what the server asked. */
const pauseAfter = (error: unknown, failures: number, intervalMs: number) => {
  const retryAfterMs = error instanceof ActuateError ? (error.details.retryAfterMs ?? 0) : 0;
  const backoff = Math.min(MAX_PAUSE_MS, FIRST_PAUSE_MS * 2 ** (failures - 1));
  return Math.max(backoff, intervalMs, retryAfterMs);
};

/**
 * Loads now and every `everyMs` while `keepPolling(data)` holds; a page that is left stops polling.
 * `everyMs` may be a function of how long the last load took (ms), to wait longer after a slow one.
 * A failed load is not asked again at once: a refusal stops until `retry`, anything else backs off.
 */
export function usePoll<T>(
  load: () => Promise<T>,
  deps: unknown[],
  everyMs: number | ((tookMs: number) => number),
  keepPolling: (data: T) => boolean = () => true,
): Polled<T> {
  const [state, setState] = useState<Loaded<T> & { againInMs: number | null }>({
    data: null,
    error: null,
    againInMs: null,
  });
  const retry = useRef(() => {});
  // The caller names what `load` reads in `deps`, as with useEffect.
  const poll = () => {
    let stopped = false;
    let loading = false;
    let failures = 0;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const tick = async () => {
      clearTimeout(timer);
      loading = true;
      let next: number | null = null;
      const started = performance.now();
      const interval = () => (typeof everyMs === "number" ? everyMs : everyMs(performance.now() - started));
      try {
        const data = await load();
        if (stopped) return;
        failures = 0;
        setState({ data, error: null, againInMs: null });
        if (keepPolling(data)) next = interval();
      } catch (error) {
        if (stopped) return;
        failures++;
        if (passes(error)) next = pauseAfter(error, failures, interval());
        setState((s) => ({ data: s.data, error: (error as Error).message, againInMs: next }));
      } finally {
        loading = false;
      }
      if (next !== null) timer = setTimeout(tick, next);
    };
    retry.current = () => {
      if (!loading && !stopped) tick();
    };
    setState({ data: null, error: null, againInMs: null });
    tick();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  };
  // biome-ignore lint/correctness/useExhaustiveDependencies: the caller lists what `load` reads, as with useEffect
  useEffect(poll, deps);
  return { ...state, retry: () => retry.current() };
}
