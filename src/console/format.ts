/** A moment as the reader's locale writes it; `—` when there is none yet. */
export const when = (iso: string | null) => (iso ? new Date(iso).toLocaleString() : "—");

/** `850 ms`, `4.2 s`, `3 min 5 s`, `2 h 10 min`: a span as a person reads it. */
export function duration(ms: number): string {
  if (ms < 1_000) return `${Math.max(0, Math.round(ms))} ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)} s`;
  const minutes = Math.floor(ms / 60_000);
  if (minutes < 60) return `${minutes} min ${Math.floor((ms % 60_000) / 1_000)} s`;
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

/** From `start` to `end`, or to now while it has not ended. */
export const spanMs = (start: string, end: string | null, now = Date.now()) =>
  (end ? Date.parse(end) : now) - Date.parse(start);

/** How long between two instants, `—` until both are known. */
export const durationOf = (from: string | null, to: string | null) => (from && to ? duration(spanMs(from, to)) : "—");

export const sizeOf = (bytes: number) =>
  bytes < 1024
    ? `${bytes} B`
    : bytes < 1024 ** 2
      ? `${(bytes / 1024).toFixed(1)} KiB`
      : `${(bytes / 1024 ** 2).toFixed(1)} MiB`;
