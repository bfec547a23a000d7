/** @jsxImportSource preact */

import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import type { ActuateClient } from "../client/index.ts";
import { useSlashFocuses } from "./keyboard.ts";
import { hrefOf } from "./route.ts";
import { classify, matchingNames } from "./search-query.ts";

interface Found {
  kind: "execution" | "run" | "request" | "action" | "file" | "caller";
  label: string;
  href: string;
}

// Typing settles before the reads go: one set of reads per pause, not per key.
const SETTLE_MS = 250;
const FILES_SHOWN = 5;

/**
 * The header's search: an execution, a run or a request by id, an action by name, a file by the start
 * of its path, a caller's executions. Composed of the reads the pages use; a read the caller may not
 * make (a user's `caller`, another's execution) finds nothing rather than failing.
 */
export function Search(props: { client: ActuateClient }) {
  const { client } = props;
  const input = useRef<HTMLInputElement>(null);
  const [text, setText] = useState("");
  const [found, setFound] = useState<Found[] | null>(null);
  const [selected, setSelected] = useState(0);
  useSlashFocuses(useCallback(() => input.current, []));

  useEffect(() => {
    const query = classify(text);
    if (query.kind === "empty") {
      setFound(null);
      return;
    }
    let current = true;
    const timer = setTimeout(async () => {
      const results = await findAll(client, query);
      if (current) {
        setFound(results);
        setSelected(0);
      }
    }, SETTLE_MS);
    return () => {
      current = false;
      clearTimeout(timer);
    };
  }, [client, text]);

  const close = () => {
    setText("");
    setFound(null);
  };
  const keys = (event: KeyboardEvent) => {
    if (!found || found.length === 0) return;
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      const step = event.key === "ArrowDown" ? 1 : -1;
      setSelected((s) => (s + step + found.length) % found.length);
    } else if (event.key === "Enter") {
      event.preventDefault();
      const choice = found[selected];
      if (choice) {
        location.hash = choice.href;
        close();
      }
    } else if (event.key === "Escape") close();
  };
  const listId = "search-results";
  return (
    <search class="search">
      <label for="search-box" class="visually-hidden">
        Search
      </label>
      <input
        id="search-box"
        ref={input}
        type="search"
        placeholder="Search (/)"
        autocomplete="off"
        aria-describedby="search-hint"
        aria-controls={found ? listId : undefined}
        value={text}
        onInput={(e) => setText(e.currentTarget.value)}
        onKeyDown={keys}
      />
      <span id="search-hint" class="visually-hidden">
        An execution, run or request id, an action's name, a file path, or a caller such as user:alice.
      </span>
      {found && (
        <ul id={listId} class="search-results" aria-label="Search results" aria-live="polite">
          {found.length === 0 && <li>Nothing found.</li>}
          {found.map((f, i) => (
            <li key={`${f.kind} ${f.href}`} data-selected={i === selected ? "true" : undefined}>
              <span class="hint">{f.kind}</span>{" "}
              <a href={f.href} onClick={close}>
                {f.label}
              </a>
            </li>
          ))}
        </ul>
      )}
    </search>
  );
}

/** Every read the query may answer, at once; a refused or missing one adds nothing. */
async function findAll(client: ActuateClient, query: ReturnType<typeof classify>): Promise<Found[]> {
  const quiet = <T,>(read: Promise<T>) => read.catch(() => null);
  if (query.kind === "id") {
    const [execution, run, request] = await Promise.all([
      quiet(client.executions.get(query.id)),
      quiet(client.runs.get(query.id)),
      quiet(client.executions.byRequest(query.id)),
    ]);
    const found: Found[] = [];
    if (execution)
      found.push({
        kind: "execution",
        label: `${execution.action} ${execution.id}`,
        href: executionHref(execution.id),
      });
    if (run)
      found.push({ kind: "run", label: `${run.workflow} ${run.id}`, href: hrefOf({ page: "runs", id: run.id }) });
    if (request)
      found.push({ kind: "request", label: `${request.action} ${request.id}`, href: executionHref(request.id) });
    return found;
  }
  if (query.kind === "caller") {
    const page = await quiet(client.executions.list({ caller: query.caller, limit: 1 }));
    return page
      ? [
          {
            kind: "caller",
            label: `${query.caller}'s executions${page.items.length === 0 ? " (none)" : ""}`,
            href: hrefOf({ page: "executions", filters: { caller: query.caller } }),
          },
        ]
      : [];
  }
  if (query.kind !== "text") return [];
  const [actions, files] = await Promise.all([
    quiet(client.contracts.list()),
    quiet(client.files.list({ prefix: query.text, limit: FILES_SHOWN })),
  ]);
  const names = matchingNames(actions?.map((a) => a.name) ?? [], query.text);
  return [
    ...names.map((name): Found => ({ kind: "action", label: name, href: hrefOf({ page: "actions", action: name }) })),
    ...(files?.items ?? []).map(
      (f): Found => ({ kind: "file", label: f.path, href: hrefOf({ page: "files", prefix: f.path }) }),
    ),
  ];
}

const executionHref = (id: string) => hrefOf({ page: "executions", id });
