import { useEffect, useState } from "preact/hooks";

/** The page, from the hash (`#/executions/<id>`): one HTML route serves every page. */
export type Route =
  | { page: "overview" }
  | { page: "actions"; action?: string }
  | { page: "executions"; id?: string }
  | { page: "runs"; id?: string }
  | { page: "releases" }
  | { page: "data"; entity?: string }
  | { page: "files" };

/** No hash (just signed in) or one the console does not know: the overview. */
export function routeOf(hash: string): Route {
  const [page, id] = hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  if (page === "executions" || page === "runs") return { page, id: id || undefined };
  if (page === "releases") return { page };
  if (page === "data") return { page, entity: id || undefined };
  if (page === "files") return { page };
  if (page === "actions") return { page, action: id || undefined };
  return { page: "overview" };
}

export const hrefOf = (route: Route) => {
  if (route.page === "releases" || route.page === "overview" || route.page === "files") return `#/${route.page}`;
  const id = route.page === "actions" ? route.action : route.page === "data" ? route.entity : route.id;
  return `#/${route.page}${id ? `/${encodeURIComponent(id)}` : ""}`;
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
