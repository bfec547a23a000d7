import { useEffect, useState } from "preact/hooks";

/** The page, from the hash (`#/executions/<id>`): one HTML route serves every page. */
export type Route =
  | { page: "actions"; action?: string }
  | { page: "executions"; id?: string }
  | { page: "releases" }
  | { page: "data"; entity?: string }
  | { page: "files" };

export function routeOf(hash: string): Route {
  const [page, id] = hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  if (page === "executions") return { page, id: id || undefined };
  if (page === "releases") return { page };
  if (page === "data") return { page, entity: id || undefined };
  if (page === "files") return { page };
  return { page: "actions", action: id || undefined };
}

export const hrefOf = (route: Route) => {
  if (route.page === "releases" || route.page === "files") return `#/${route.page}`;
  const id = route.page === "executions" ? route.id : route.page === "data" ? route.entity : route.action;
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
