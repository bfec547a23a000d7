import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { dialects } from "../support/databases.ts";
import { type HostingServer, startHostingServer } from "../support/hosting.ts";
import { LiveClient } from "../support/live-client.ts";
import { fixture } from "../support/server.ts";

// Issue #41 §4's auth matrix: another environment's environment key, organization key, user token and
// signed URLs, on every surface of this environment. Each credential is first shown to work at home, so a
// refusal here is the environment's, not a broken credential. (OAuth access tokens: the one authority of
// the service is built elsewhere; its audience checks are tested with it.)

const RELEASE = fixture("environments");

/** One request of each surface a bearer credential opens. */
const SURFACES: { name: string; path: string; init?: () => RequestInit; service?: boolean }[] = [
  {
    name: "invoke",
    path: "/actions/env.whoami/invoke",
    init: () => ({
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ requestId: crypto.randomUUID(), input: { note: "x" } }),
    }),
  },
  { name: "contract", path: "/actions/env.whoami/contract" },
  { name: "executions", path: "/executions" },
  { name: "runs", path: "/runs" },
  { name: "scheduled", path: "/scheduled" },
  {
    name: "query",
    path: "/query",
    init: () => ({
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ query: { items: {} } }),
    }),
  },
  {
    name: "upload",
    path: "/storage/upload",
    // A path of its own each time: replacing a path is for its owner.
    init: () => ({
      method: "PUT",
      headers: { path: `access/${crypto.randomUUID()}.txt`, "content-type": "text/plain" },
      body: "x",
    }),
  },
  { name: "files", path: "/storage/files" },
  { name: "releases", path: "/releases", service: true },
  { name: "stats", path: "/stats", service: true },
  {
    name: "mcp",
    path: "/mcp",
    init: () => ({
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "access", version: "1" } },
      }),
    }),
  },
];

for (const dialect of dialects) {
  describe(`another environment's credentials (${dialect.name})`, () => {
    let h: HostingServer;
    const credentials: Record<string, { token: string; service: boolean }> = {};

    beforeAll(async () => {
      h = await startHostingServer(dialect, {
        environments: [
          { handle: "a", organization: "acme", release: RELEASE },
          { handle: "b", organization: "beta", release: RELEASE },
          { handle: "b2", organization: "beta", release: RELEASE },
        ],
      });
      credentials["b's environment key"] = { token: await h.key({ environment: "b" }), service: true };
      credentials["beta's organization key"] = { token: await h.key({ organization: "beta" }), service: true };
      credentials["b's user token (alice)"] = { token: await h.userToken("b", "alice"), service: false };
      // The same user id in A: alice's token of A is A's, not the one above.
      await h.userToken("a", "alice");
    });
    afterAll(() => h?.stop());

    test("each works at home: every surface it may use answers below 400 in b", async () => {
      for (const [name, { token, service }] of Object.entries(credentials)) {
        for (const surface of SURFACES.filter((s) => service || !s.service)) {
          const res = await h.fetch("b", surface.path, { ...surface.init?.(), token });
          expect([name, surface.name, res.status < 400]).toEqual([name, surface.name, true]);
        }
      }
      // An organization key covers each environment of its organization.
      const orgKey = credentials["beta's organization key"]?.token as string;
      expect((await h.fetch("b2", "/stats", { token: orgKey })).status).toBe(200);
    });

    test("in a, each is 401 invalid_token on every surface, in the usual JSON shape", async () => {
      for (const [name, { token }] of Object.entries(credentials)) {
        for (const surface of SURFACES) {
          const res = await h.fetch("a", surface.path, { ...surface.init?.(), token });
          expect([name, surface.name, res.status]).toEqual([name, surface.name, 401]);
          expect(res.headers.get("www-authenticate")).toContain('error="invalid_token"');
          expect(await res.json()).toMatchObject({ ok: false, error: "unauthorized" });
        }
      }
    });

    test("an environment key of b is refused in b2, its sibling of the same organization", async () => {
      const res = await h.fetch("b2", "/stats", { token: credentials["b's environment key"]?.token as string });
      expect(res.status).toBe(401);
    });

    test("/metrics holds every environment's series: no environment's credential reads it, on any host", async () => {
      for (const [name, { token }] of Object.entries(credentials)) {
        for (const host of ["a", "b", null]) {
          const res = await h.fetch(host, "/metrics", { token });
          expect([name, host, res.status]).toEqual([name, host, 401]);
          expect(await res.text()).not.toContain("actuate_");
        }
      }
      expect((await h.fetch(null, "/metrics")).status).toBe(200);
    });

    test("in a, a /session socket refuses each at init", async () => {
      for (const [name, { token }] of Object.entries(credentials)) {
        const client = await LiveClient.connect(h.at("a"));
        try {
          client.send({ op: "init", "access-token": token, "client-event-id": name });
          expect(await client.op("error")).toMatchObject({ status: 401, "client-event-id": name });
        } finally {
          client.close();
        }
      }
    });

    test("b's signed URLs (download, upload) are refused on a's host, and a's file is untouched", async () => {
      const alice = credentials["b's user token (alice)"]?.token as string;
      const aliceOfA = await h.userToken("a", "alice");
      const path = "signed/same.txt";
      for (const [handle, token] of [
        ["a", aliceOfA],
        ["b", alice],
      ] as const) {
        const res = await h.fetch(handle, "/storage/upload", {
          method: "PUT",
          headers: { path, "content-type": "text/plain" },
          body: `${handle}'s`,
          token,
        });
        expect(res.status).toBeLessThan(300);
      }
      const download = await (
        await h.fetch("b", `/storage/signed-download-url?filename=${encodeURIComponent(path)}`, { token: alice })
      ).json();
      const upload = await (
        await h.fetch("b", "/storage/signed-upload-url", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ path, contentType: "text/plain" }),
          token: alice,
        })
      ).json();
      const onA = (url: string) => url.replace(h.at("b"), h.at("a"));
      expect(onA(download.url)).not.toBe(download.url);

      const read = await fetch(onA(download.url));
      expect(read.status).toBe(403);
      expect(await read.json()).toMatchObject({ ok: false, error: "signed_url_invalid" });
      const written = await fetch(onA(upload.url), {
        method: "PUT",
        headers: { "content-type": "text/plain" },
        body: "b's, sent to a",
      });
      expect(written.status).toBe(403);
      expect(await written.json()).toMatchObject({ ok: false, error: "signed_url_invalid" });

      const mine = await (
        await h.fetch("a", `/storage/signed-download-url?filename=${encodeURIComponent(path)}`, { token: aliceOfA })
      ).json();
      expect(await (await fetch(mine.url)).text()).toBe("a's");
      // At home, both URLs work.
      expect(await (await fetch(download.url)).text()).toBe("b's");
      expect(
        (await fetch(upload.url, { method: "PUT", headers: { "content-type": "text/plain" }, body: "b's again" }))
          .status,
      ).toBeLessThan(300);
    });
  });
}
