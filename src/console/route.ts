import { useEffect, useState } from "preact/hooks";

/** The executions list's filters, as `/executions` takes them (since/until ISO instants). */
export type ExecutionFilters = Partial<Record<"action" | "status" | "caller" | "since" | "until", string>>;

/**
 * The page, from the hash (`#/executions/<id>`): one HTML route serves every page. A list's filters and
 * an action's prefill (`from`, an execution id) are the hash's query, so a filtered view can be shared.
 */
export type Route =
  | { page: "overview" }
  | { page: "actions"; action?: string; from?: string }
  | { page: "executions"; id?: string; filters?: ExecutionFilters }
  | { page: "runs"; id?: string }
  | { page: "releases" }
  | { page: "data"; entity?: string }
  | { page: "files" }
  | { page: "sign-ins" }
  | { page: "variables" };

const FILTERS = ["action", "status", "caller", "since", "until"] as const;

/** No hash (just signed in) or one the console does not know: the overview. */
export function routeOf(hash: string): Route {
  const [path = "", query] = hash.replace(/^#\/?/, "").split("?");
  const [page, id] = path.split("/").map(decodeURIComponent);
  const search = new URLSearchParams(query);
  if (page === "executions") {
    const filters: ExecutionFilters = {};
    for (const name of FILTERS) if (search.get(name)) filters[name] = search.get(name) ?? undefined;
    return { page, id: id || undefined, filters };
  }
  if (page === "runs") return { page, id: id || undefined };
  if (page === "data") return { page, entity: id || undefined };
  if (page === "releases" || page === "files" || page === "sign-ins" || page === "variables") return { page };
  if (page === "actions") return { page, action: id || undefined, from: search.get("from") ?? undefined };
  return { page: "overview" };
}

const queryOf = (params: Record<string, string | undefined>) => {
  const search = new URLSearchParams(Object.entries(params).filter((e): e is [string, string] => Boolean(e[1])));
  return search.size > 0 ? `?${search}` : "";
};

export const hrefOf = (route: Route) => {
  if (
    route.page === "releases" ||
    route.page === "overview" ||
    route.page === "files" ||
    route.page === "sign-ins" ||
    route.page === "variables"
  )
    return `#/${route.page}`;
  const id = route.page === "actions" ? route.action : route.page === "data" ? route.entity : route.id;
  const query =
    route.page === "executions"
      ? queryOf(route.filters ?? {})
      : route.page === "actions"
        ? queryOf({ from: route.from })
        : "";
  return `#/${route.page}${id ? `/${encodeURIComponent(id)}` : ""}${query}`;
};

export function useRoute(): Route {
  const [route, setRoute] = useState(() => routeOf(location.hash));
  useEffect(() => {
    const changed = () => setRoute(routeOf(location.hash));
    addEventListener("hashchange", changed);
    return () => removeEventListener("hashchange", changed);
  }, []);
  return route;
}
