/** @jsxImportSource preact */
import type { ComponentChildren } from "preact";
import { useState } from "preact/hooks";

const SHORT = 8;

/**
 * An id as its first 8 characters, a link when `href` is given, and a button copying the whole id. The
 * whole id stays the link's accessible name and its `title`: it is what a reader searches for and pastes.
 */
export function ShortId(props: { id: string; href?: string; label?: string }) {
  const { id, href } = props;
  const short = <code class="id">{id.slice(0, SHORT)}</code>;
  const name = props.label ? `${props.label} ${id}` : id;
  return (
    <span class="short-id">
      {href ? (
        <a href={href} title={id} aria-label={name}>
          {short}
        </a>
      ) : (
        <span title={id}>{short}</span>
      )}
      <CopyButton text={id} label={`Copy ${props.label ?? "id"} ${id}`} />
    </span>
  );
}

function CopyButton(props: { text: string; label: string }) {
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(props.text);
      setCopied(true);
      setTimeout(() => setCopied(false), 1_500);
    } catch {
      // Refused (an insecure origin, no permission): the id is still selectable in the title and the link.
    }
  };
  return (
    <button type="button" class="copy" aria-label={props.label} title="Copy" onClick={copy}>
      {copied ? (
        <svg viewBox="0 0 16 16" width="12" height="12" aria-hidden="true">
          <path d="M3 8.5l3 3 7-7" fill="none" stroke="currentColor" stroke-width="2" />
        </svg>
      ) : (
        <svg viewBox="0 0 16 16" width="12" height="12" aria-hidden="true">
          <rect x="5" y="5" width="9" height="9" rx="1.5" fill="none" stroke="currentColor" stroke-width="1.5" />
          <path
            d="M11 3.5V3a1 1 0 0 0-1-1H3a1 1 0 0 0-1 1v7a1 1 0 0 0 1 1h.5"
            fill="none"
            stroke="currentColor"
            stroke-width="1.5"
          />
        </svg>
      )}
    </button>
  );
}

const UNITS: [Intl.RelativeTimeFormatUnit, number][] = [
  ["day", 86_400_000],
  ["hour", 3_600_000],
  ["minute", 60_000],
  ["second", 1_000],
];
const relative = new Intl.RelativeTimeFormat("en", { numeric: "auto", style: "short" });

/** `3 min ago`, `in 2 hr`: how far `iso` is from `now`, in the largest unit that fits. */
export function ago(iso: string, now = Date.now()): string {
  const ms = Date.parse(iso) - now;
  for (const [unit, size] of UNITS) {
    if (Math.abs(ms) >= size || unit === "second") return relative.format(Math.round(ms / size), unit);
  }
  return "";
}

/** A moment as a relative time, the exact instant in `title` and in `<time datetime>`; `—` when none. */
export function When(props: { at: string | null | undefined }) {
  if (!props.at) return <span class="hint">—</span>;
  return (
    <time dateTime={props.at} title={new Date(props.at).toISOString()}>
      {ago(props.at)}
    </time>
  );
}

/** A status as a coloured badge: the word is always there, the colour only repeats it. */
export function StatusBadge(props: { status: string; testId?: string }) {
  return (
    <span class={`badge status-${props.status}`} data-testid={props.testId}>
      {props.status}
    </span>
  );
}

/** An empty list said in words, with what would fill it. */
export function EmptyState(props: { title: string; children?: ComponentChildren }) {
  return (
    <div class="state state-empty">
      <p class="state-title">{props.title}</p>
      {props.children && <p class="hint">{props.children}</p>}
    </div>
  );
}

/** A first load under way: announced politely, drawn as a quiet placeholder rather than a blank page. */
export function LoadingState(props: { what: string }) {
  return (
    <div class="state state-loading" role="status">
      <span class="spinner" aria-hidden="true" /> Loading {props.what}…
    </div>
  );
}

/** A failure that is not a load's (a form's, a lookup's): why, and optionally a way out. */
export function ErrorState(props: { message: string; children?: ComponentChildren }) {
  return (
    <div class="state state-error error" role="alert">
      <p class="state-title">{props.message}</p>
      {props.children}
    </div>
  );
}
