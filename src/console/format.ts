export const when = (iso: string | null) => (iso ? new Date(iso).toLocaleString() : "—");

/** How long between two instants, for a person: `850 ms`, `12.3 s`, `4 min 05 s`; `—` before it ends. */
export function durationOf(from: string | null, to: string | null): string {
  if (!from || !to) return "—";
  const ms = Date.parse(to) - Date.parse(from);
  if (ms < 1_000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)} s`;
  const seconds = Math.round(ms / 1_000);
  return `${Math.floor(seconds / 60)} min ${String(seconds % 60).padStart(2, "0")} s`;
}

export const sizeOf = (bytes: number) =>
  bytes < 1024
    ? `${bytes} B`
    : bytes < 1024 ** 2
      ? `${(bytes / 1024).toFixed(1)} KiB`
      : `${(bytes / 1024 ** 2).toFixed(1)} MiB`;
