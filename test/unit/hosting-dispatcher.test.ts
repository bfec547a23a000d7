import { describe, expect, test } from "bun:test";
import { Dispatcher, type EnvironmentEntry } from "../../src/hosting/dispatcher.ts";
import { serveFilter } from "../../src/hosting/serve-filter.ts";

// The dispatcher's memory of environments: what it asks the directory, when it composes a runtime.
const service = { scheme: "http", apex: "actuate.localhost", port: 3000 } as const;

function dispatcherOver(environments: Map<string, EnvironmentEntry>, serve: string[] | null = null) {
  const asked: string[] = [];
  const opened: string[] = [];
  const handles = new Map<unknown, string>();
  let failNextOpen = false;
  const dispatcher = new Dispatcher({
    service,
    trustProxy: false,
    serves: serveFilter(serve),
    directory: {
      byHandle: async (handle) => {
        asked.push(handle);
        return environments.get(handle) ?? null;
      },
      nameSingle: async () => environments.get("main") as EnvironmentEntry,
    },
    open: async ({ handle }) => {
      await Bun.sleep(5);
      if (failNextOpen) {
        failNextOpen = false;
        throw new Error("the release did not load");
      }
      opened.push(handle);
      const handler = () => Response.json({ environment: handle });
      handles.set(handler, handle);
      return handler;
    },
    apex: () => Response.json({ apex: true }),
    // Each environment's handler of one route, as native-routes.ts's lookup gives them.
    routesOf: (handler) => {
      const handle = handles.get(handler);
      if (handle === undefined) return undefined;
      return (key) => (key === INVOKE ? () => Response.json({ environment: handle, route: key }) : undefined);
    },
  });
  const get = (host: string, path = "/actions") =>
    Promise.resolve(dispatcher.fetch(new Request(`http://${host}${path}`, { headers: { host } })));
  return { dispatcher, asked, opened, get, failOpen: () => (failNextOpen = true) };
}

const INVOKE = "POST /actions/:name/invoke";
const entry = (id: number, handle: string, organization: string | null = null) => ({ id, handle, organization });

describe("Dispatcher", () => {
  test("concurrent first requests of an environment compose it once; later ones ask nobody", async () => {
    const { asked, opened, get } = dispatcherOver(new Map([["acme", entry(2, "acme")]]));
    const answers = await Promise.all([1, 2, 3].map(() => get("acme.actuate.localhost:3000")));
    expect(await Promise.all(answers.map((answer) => answer.json()))).toEqual(
      [1, 2, 3].map(() => ({ environment: "acme" })),
    );
    await get("acme.actuate.localhost:3000");
    expect(opened).toEqual(["acme"]);
    expect(asked).toEqual(["acme"]);
  });

  test("an unknown handle is not remembered: an environment created later is served", async () => {
    const environments = new Map<string, EnvironmentEntry>();
    const { get } = dispatcherOver(environments);
    expect((await get("late.actuate.localhost")).status).toBe(404);
    environments.set("late", entry(5, "late"));
    expect(await (await get("late.actuate.localhost")).json()).toEqual({ environment: "late" });
  });

  test("a runtime that failed to start is tried again by the next request", async () => {
    const { get, failOpen, opened } = dispatcherOver(new Map([["acme", entry(2, "acme")]]));
    failOpen();
    await expect(get("acme.actuate.localhost")).rejects.toThrow("the release did not load");
    expect((await get("acme.actuate.localhost")).status).toBe(200);
    expect(opened).toEqual(["acme"]);
  });

  test("not served here: 421, remembered, never composed", async () => {
    const { get, asked, opened } = dispatcherOver(new Map([["shop", entry(3, "shop", "beta")]]), ["org:acme"]);
    for (const _ of [1, 2]) {
      const answer = await get("shop.actuate.localhost");
      expect(answer.status).toBe(421);
      expect(await answer.json()).toMatchObject({ ok: false, error: "environment_not_served" });
    }
    expect(asked).toEqual(["shop"]);
    expect(opened).toEqual([]);
  });

  test("adopted environments, the apex and the probes on any host", async () => {
    const { dispatcher, get, asked } = dispatcherOver(new Map());
    dispatcher.adopt("main", () => Response.json({ environment: "main" }));
    expect(await (await get("main.actuate.localhost")).json()).toEqual({ environment: "main" });
    expect(await (await get("actuate.localhost", "/")).json()).toEqual({ apex: true });
    expect(await (await get("10.0.0.1:3000", "/healthz")).json()).toEqual({ apex: true });
    expect(await (await get("nobody.actuate.localhost", "/readyz")).json()).toEqual({ apex: true });
    expect((await get("10.0.0.1:3000", "/actions")).status).toBe(404);
    expect(asked).toEqual([]);
    // A composed environment's host too: /metrics (every environment's series) is never its app's.
    for (const path of ["/metrics", "/metrics?x=1", "/healthz", "/readyz"]) {
      expect(await (await get("main.actuate.localhost", path)).json()).toEqual({ apex: true });
    }
    for (const path of ["/metricsx", "/metrics/x", "/actions/metrics"]) {
      expect(await (await get("main.actuate.localhost", path)).json()).toEqual({ environment: "main" });
    }
  });

  test("a served environment is remembered by each spelling of its host, until it is forgotten", async () => {
    const environments = new Map([["acme", entry(2, "acme")]]);
    const { dispatcher, asked, get } = dispatcherOver(environments);
    for (const host of [
      "acme.actuate.localhost:3000",
      "ACME.actuate.localhost",
      "acme.actuate.localhost.",
      "acme.actuate.localhost",
    ]) {
      expect(await (await get(host)).json()).toEqual({ environment: "acme" });
      expect(await (await get(host)).json()).toEqual({ environment: "acme" });
    }
    expect(asked).toEqual(["acme"]);
    // Remembered or not, a probe on its host is the apex's.
    expect(await (await get("acme.actuate.localhost", "/metrics")).json()).toEqual({ apex: true });
    environments.delete("acme");
    dispatcher.forget("acme");
    expect((await get("acme.actuate.localhost")).status).toBe(404);
    expect(asked).toEqual(["acme", "acme"]);
  });

  test("a route Bun matched goes to its environment's handler of it once the host is known; else as fetch sends it", async () => {
    const { dispatcher, get } = dispatcherOver(new Map([["acme", entry(2, "acme")]]));
    const routed = (host: string, key: string, path: string, url = path) =>
      Promise.resolve(
        dispatcher.routed(key, path)(new Request(`http://${host}${url}`, { method: "POST", headers: { host } })),
      );
    const invoke = (host: string) => routed(host, INVOKE, "/actions/:name/invoke", "/actions/math.add/invoke");
    // Not known yet: its first request composes it, the next finds it served and remembers its host (its app both times).
    for (const _ of [1, 2]) {
      expect(await (await invoke("acme.actuate.localhost")).json()).toEqual({ environment: "acme" });
    }
    expect(await (await invoke("acme.actuate.localhost")).json()).toEqual({ environment: "acme", route: INVOKE });
    // A route the environment has no handler of: its app.
    expect(await (await routed("acme.actuate.localhost", "POST /other", "/other")).json()).toEqual({
      environment: "acme",
    });
    // A one-segment route may be a probe: the apex's.
    expect(await (await routed("acme.actuate.localhost", "GET /healthz", "/healthz")).json()).toEqual({ apex: true });
    expect(await (await invoke("actuate.localhost")).json()).toEqual({ apex: true });
    expect((await invoke("nobody.actuate.localhost")).status).toBe(404);
    // Forgotten: its app again once it is served again (here: composed anew).
    dispatcher.forget("acme");
    expect(await (await invoke("acme.actuate.localhost")).json()).toEqual({ environment: "acme" });
    expect(await (await get("acme.actuate.localhost")).json()).toEqual({ environment: "acme" });
  });
});
