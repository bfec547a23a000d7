import { useEffect, useState } from "preact/hooks";
import { type Route, routeOf } from "./route-hash.ts";

export * from "./route-hash.ts";

/** The page the address bar names, again at each change (a link, back, forward). */
export function useRoute(): Route {
  const [route, setRoute] = useState(() => routeOf(location.hash));
  useEffect(() => {
    const changed = () => setRoute(routeOf(location.hash));
    addEventListener("hashchange", changed);
    return () => removeEventListener("hashchange", changed);
  }, []);
  return route;
}
