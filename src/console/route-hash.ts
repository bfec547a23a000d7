// No preact and no DOM here: test/unit/console-search.test.ts runs it under Bun.

/** The executions list's filters, as `/executions` takes them (since/until ISO instants). */
export type ExecutionFilters = Partial<Record<"action" | "status" | "caller" | "since" | "until", string>>;
/** The runs list's filters, as `/runs` takes them. */
export type RunFilters = Partial<Record<"workflow" | "status", string>>;
/** An entity's rows as the data page browses them (the query's where as JSON text). */
export type BrowseFilters = Partial<Record<"where" | "orderBy" | "direction" | "limit", string>>;

/**
 * The page, from the hash (`#/executions/<id>`): one HTML route serves every page. A list's filters and
 * an action's prefill (`from`, an execution id) are the hash's query, so a filtered view can be shared,
 * and back and forward go through the filters as they were applied.
 */
export type Route =
  | { page: "overview" }
  | { page: "actions"; action?: string; from?: string }
  | { page: "executions"; id?: string; filters?: ExecutionFilters }
  | { page: "runs"; id?: string; filters?: RunFilters }
  | { page: "releases" }
  | { page: "data"; entity?: string; browse?: BrowseFilters }
  | { page: "files"; prefix?: string }
  | { page: "sign-ins" }
  | { page: "variables" };

const EXECUTION_FILTERS = ["action", "status", "caller", "since", "until"] as const;
const RUN_FILTERS = ["workflow", "status"] as const;
const BROWSE_FILTERS = ["where", "orderBy", "direction", "limit"] as const;

const picked = <K extends string>(search: URLSearchParams, names: readonly K[]) => {
  const values: Partial<Record<K, string>> = {};
  for (const name of names) if (search.get(name)) values[name] = search.get(name) ?? undefined;
  return values;
};

/** No hash (just signed in) or one the console does not know: the overview. */
export function routeOf(hash: string): Route {
  const [path = "", query] = hash.replace(/^#\/?/, "").split("?");
  const [page, id] = path.split("/").map(decodeURIComponent);
  const search = new URLSearchParams(query);
  if (page === "executions") return { page, id: id || undefined, filters: picked(search, EXECUTION_FILTERS) };
  if (page === "runs") return { page, id: id || undefined, filters: picked(search, RUN_FILTERS) };
  if (page === "data") return { page, entity: id || undefined, browse: picked(search, BROWSE_FILTERS) };
  if (page === "files") return { page, prefix: search.get("prefix") || undefined };
  if (page === "releases" || page === "sign-ins" || page === "variables") return { page };
  if (page === "actions") return { page, action: id || undefined, from: search.get("from") ?? undefined };
  return { page: "overview" };
}

const queryOf = (params: Record<string, string | undefined>) => {
  const search = new URLSearchParams(Object.entries(params).filter((e): e is [string, string] => Boolean(e[1])));
  return search.size > 0 ? `?${search}` : "";
};

export const hrefOf = (route: Route) => {
  switch (route.page) {
    case "overview":
    case "releases":
    case "sign-ins":
    case "variables":
      return `#/${route.page}`;
    case "files":
      return `#/files${queryOf({ prefix: route.prefix })}`;
    case "actions":
      return `#/actions${idPart(route.action)}${queryOf({ from: route.from })}`;
    case "executions":
      return `#/executions${idPart(route.id)}${queryOf(route.filters ?? {})}`;
    case "runs":
      return `#/runs${idPart(route.id)}${queryOf(route.filters ?? {})}`;
    case "data":
      return `#/data${idPart(route.entity)}${queryOf(route.browse ?? {})}`;
  }
};

const idPart = (id: string | undefined) => (id ? `/${encodeURIComponent(id)}` : "");
