/** @jsxImportSource preact */
import { ErrorState } from "./ui.tsx";
import type { Polled } from "./use-poll.ts";

/** A failure to show where it happened, announced to screen readers; nothing when there is none. */
export function Alert(props: { message: string | null | undefined }) {
  if (!props.message) return null;
  return (
    <p class="error" role="alert">
      {props.message}
    </p>
  );
}

/** What an action the person took came to: a status line, or an alert when it failed. */
export type Outcome = { text: string; error: boolean } | null;

export function OutcomeLine(props: { outcome: Outcome }) {
  const { outcome } = props;
  if (!outcome) return null;
  return (
    <p role={outcome.error ? "alert" : "status"} class={outcome.error ? "error" : undefined}>
      {outcome.text}
    </p>
  );
}

/** A load that failed: why, when the page asks again by itself (if it will), and a button to ask now. */
export function LoadFailure(props: { loaded: Polled<unknown> }) {
  const { error, againInMs, retry } = props.loaded;
  if (!error) return null;
  const again = againInMs === null ? "" : ` Trying again in ${Math.round(againInMs / 1000)} s.`;
  return (
    <ErrorState message={`${error}${again}`}>
      <button type="button" class="secondary" onClick={retry}>
        Try again
      </button>
    </ErrorState>
  );
}
