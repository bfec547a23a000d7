/** @jsxImportSource preact */

import { useState } from "preact/hooks";
import type { ActuateClient, AttributeSchema, ReleaseDescription } from "../client/index.ts";
import { Alert, LoadFailure } from "./alert.tsx";
import { browseFiltersOf, browseSettingsOf } from "./browse-route.ts";
import { type BrowseSettings, browseQuery, cellText, parseQuery } from "./data-query.ts";
import { type BrowseFilters, hrefOf } from "./route.ts";
import { ScrollBox } from "./scroll-box.tsx";
import { EmptyState } from "./ui.tsx";
import { usePoll } from "./use-poll.ts";

const never = () => false;
const PAGE = 50;

/** The release's entities (from `GET /describe`), a table browser per entity, and a query playground. */
export function DataPage(props: { client: ActuateClient; entity?: string; browse?: BrowseFilters }) {
  const { client } = props;
  const description = usePoll(() => client.describe(), [client], 0, never);
  const entities = Object.keys(description.data?.entities ?? {});
  const chosen = props.entity ? description.data?.entities[props.entity] : undefined;
  return (
    <main class="layout">
      <nav aria-label="Entities">
        <h1>Data</h1>
        <LoadFailure loaded={description} />
        <ul>
          {entities.map((name) => (
            <li key={name}>
              <a
                href={hrefOf({ page: "data", entity: name })}
                aria-current={name === props.entity ? "page" : undefined}
              >
                {name}
              </a>
            </li>
          ))}
        </ul>
        {description.data && entities.length === 0 && <EmptyState title="The active release has no entities." />}
      </nav>
      <section>
        {props.entity && description.data && !chosen && (
          <p class="error" role="alert">
            The active release has no entity {props.entity}.
          </p>
        )}
        {props.entity && description.data && chosen && (
          <Entity
            key={props.entity}
            client={client}
            name={props.entity}
            attributes={chosen}
            links={description.data.links}
            browse={props.browse}
          />
        )}
        {description.data && <Playground client={client} example={props.entity ?? entities[0]} />}
      </section>
    </main>
  );
}

function Entity(props: {
  client: ActuateClient;
  name: string;
  attributes: Record<string, AttributeSchema>;
  links: ReleaseDescription["links"];
  browse?: BrowseFilters;
}) {
  const { name, attributes } = props;
  const labels = Object.keys(attributes);
  // Each end of a link that starts at this entity: its label reads the entity at the other end.
  const ends = Object.entries(props.links).flatMap(([link, { forward, reverse }]) => [
    ...(forward.on === name ? [{ link, label: forward.label, has: forward.has, to: reverse.on }] : []),
    ...(reverse.on === name ? [{ link, label: reverse.label, has: reverse.has, to: forward.on }] : []),
  ]);
  return (
    <article>
      <h2>{name}</h2>
      <ScrollBox label={`${name} attributes, scrolled`}>
        <table aria-label={`${name} attributes`}>
          <thead>
            <tr>
              <th scope="col">Attribute</th>
              <th scope="col">Type</th>
              <th scope="col">Required</th>
              <th scope="col">Index</th>
            </tr>
          </thead>
          <tbody>
            {Object.entries(attributes).map(([label, a]) => (
              <tr key={label}>
                <td>{label}</td>
                <td>{a.type}</td>
                <td>{a.optional ? "optional" : "required"}</td>
                <td>{a.unique ? "unique" : a.indexed ? "indexed" : ""}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </ScrollBox>
      {ends.length > 0 && (
        <>
          <h3>Links</h3>
          <ul>
            {ends.map((end) => (
              <li key={`${end.link}.${end.label}`}>
                <code>{end.label}</code>: {end.has === "one" ? "one" : "many"}{" "}
                <a href={hrefOf({ page: "data", entity: end.to })}>{end.to}</a>{" "}
                <span class="hint">(link {end.link})</span>
              </li>
            ))}
          </ul>
        </>
      )}
      <TableBrowser
        key={JSON.stringify(props.browse ?? {})}
        client={props.client}
        entity={name}
        labels={labels}
        browse={props.browse}
      />
    </article>
  );
}

function TableBrowser(props: { client: ActuateClient; entity: string; labels: string[]; browse?: BrowseFilters }) {
  const { client, entity, labels } = props;
  // What is applied lives in the hash: a link shows the same rows, back and forward go through them.
  const [applied] = useState(() => browseSettingsOf(props.browse, PAGE));
  const [draft, setDraft] = useState<BrowseSettings>(applied);
  const setApplied = (settings: BrowseSettings) => {
    location.hash = hrefOf({ page: "data", entity, browse: browseFiltersOf(settings, PAGE) });
  };
  const rows = usePoll(
    async () => {
      const answer = await client.query(browseQuery(entity, applied));
      return (answer[entity] ?? []) as Record<string, unknown>[];
    },
    [client, entity, applied],
    0,
    never,
  );
  const [invalid, setInvalid] = useState<string | null>(null);
  const set = (change: Partial<BrowseSettings>) => setDraft((d) => ({ ...d, ...change }));
  const submit = (event: Event) => {
    event.preventDefault();
    try {
      browseQuery(entity, draft);
      setInvalid(null);
      setApplied({ ...draft });
    } catch (error) {
      setInvalid((error as Error).message);
    }
  };
  const columns = ["id", ...labels];
  return (
    <section aria-label={`Browse ${entity}`}>
      <h3>Rows</h3>
      <form class="filters" onSubmit={submit} aria-label={`Filter ${entity}`}>
        <label for="browse-where">Where (JSON)</label>
        <textarea
          id="browse-where"
          rows={2}
          placeholder='{"done": false}'
          value={draft.where}
          onInput={(e) => set({ where: e.currentTarget.value })}
        />
        <div class="row">
          <div>
            <label for="browse-order">Order by</label>
            <select id="browse-order" value={draft.orderBy} onChange={(e) => set({ orderBy: e.currentTarget.value })}>
              <option value="">creation</option>
              {labels.map((label) => (
                <option key={label} value={label}>
                  {label}
                </option>
              ))}
            </select>
          </div>
          <div>
            <label for="browse-direction">Direction</label>
            <select
              id="browse-direction"
              value={draft.direction}
              onChange={(e) => set({ direction: e.currentTarget.value as BrowseSettings["direction"] })}
            >
              <option value="asc">ascending</option>
              <option value="desc">descending</option>
            </select>
          </div>
          <div>
            <label for="browse-limit">Limit</label>
            <input
              id="browse-limit"
              type="number"
              min={1}
              max={1000}
              required
              value={draft.limit}
              onInput={(e) => set({ limit: Number(e.currentTarget.value) })}
            />
          </div>
        </div>
        <p>
          <button type="submit">Show rows</button>
        </p>
      </form>
      {invalid ? <Alert message={invalid} /> : <LoadFailure loaded={rows} />}
      <ScrollBox label={`${entity} rows, scrolled`}>
        <table aria-label={`${entity} rows`}>
          <thead>
            <tr>
              {columns.map((c) => (
                <th key={c} scope="col">
                  {c}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {rows.data?.map((row) => (
              <tr key={String(row.id)}>
                {columns.map((c) => (
                  <td key={c}>{cellText(row[c])}</td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </ScrollBox>
      {rows.data?.length === 0 && <EmptyState title="No rows you may see." />}
    </section>
  );
}

/** InstaQL in, objects or triples out, run as the signed-in caller: the server leaves out what it may not see. */
function Playground(props: { client: ActuateClient; example?: string }) {
  const [text, setText] = useState(() =>
    props.example ? JSON.stringify({ [props.example]: { $: { limit: 10 } } }, null, 2) : "{}",
  );
  const [format, setFormat] = useState<"objects" | "triples">("objects");
  const [busy, setBusy] = useState(false);
  const [outcome, setOutcome] = useState<{ result?: unknown; error?: string } | null>(null);
  const run = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    try {
      setOutcome({ result: await props.client.query(parseQuery(text), { format }) });
    } catch (error) {
      setOutcome({ error: (error as Error).message });
    } finally {
      setBusy(false);
    }
  };
  return (
    <section aria-label="Query playground">
      <h2>Query playground</h2>
      <form onSubmit={run} aria-label="Query">
        <label for="playground-query">Query (InstaQL, JSON)</label>
        <textarea
          id="playground-query"
          class="code"
          rows={8}
          spellcheck={false}
          value={text}
          onInput={(e) => setText(e.currentTarget.value)}
        />
        <fieldset>
          <legend>Answer as</legend>
          {(["objects", "triples"] as const).map((f) => (
            <label key={f} class="inline">
              <input type="radio" name="format" value={f} checked={format === f} onChange={() => setFormat(f)} /> {f}
            </label>
          ))}
        </fieldset>
        <p>
          <button type="submit" disabled={busy}>
            Run query
          </button>
        </p>
      </form>
      <div aria-live="polite">
        {outcome?.error && (
          <p class="error" role="alert">
            {outcome.error}
          </p>
        )}
        {outcome && "result" in outcome && (
          <pre data-testid="query-result">{JSON.stringify(outcome.result, null, 2)}</pre>
        )}
      </div>
    </section>
  );
}
