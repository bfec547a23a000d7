import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { dialects } from "../support/databases.ts";
import { type HostingServer, startHostingServer } from "../support/hosting.ts";
import { fixture, type TestResponse } from "../support/server.ts";

// Issue #41 §1: the console's page answers on the apex and on every environment served, and, like every
// other path but the probes, an unknown handle or a host outside the service is 404 environment_not_found.
const sqlite = dialects.filter((d) => d.name === "sqlite");
for (const dialect of sqlite) {
  describe(`the console's page in hosting mode (${dialect.name})`, () => {
    let h: HostingServer;
    beforeAll(async () => {
      h = await startHostingServer(dialect, {
        environments: [{ handle: "acme-prod", organization: "acme", release: fixture("basic") }],
        env: { SERVE_ENVIRONMENTS: "main,org:acme" },
      });
      await h.create({ handle: "beta-prod", organization: "beta" });
    });
    afterAll(() => h?.stop());

    const page = (url: string) => fetch(`${url}/console`);

    test("the apex and an environment answer the page, and the chunks it names", async () => {
      for (const url of [h.at(null), h.at("acme-prod"), h.at("main")]) {
        const answer = await page(url);
        expect(answer.status).toBe(200);
        expect(answer.headers.get("content-type")).toStartWith("text/html");
        const html = await answer.text();
        const chunks = [...html.matchAll(/(?:src|href)="(\/chunk-[a-z0-9]+\.(?:js|css))"/g)].map((m) => m[1]);
        expect(chunks.length).toBeGreaterThan(0);
        for (const chunk of chunks) {
          const asset = await fetch(`${url}${chunk}`);
          expect(asset.status).toBe(200);
          expect(asset.headers.get("etag")).not.toBeNull();
          // Cached by its ETag, as Bun's own route answers it.
          const again = await fetch(`${url}${chunk}`, {
            headers: { "if-none-match": asset.headers.get("etag") ?? "" },
          });
          expect(again.status).toBe(304);
        }
      }
    });

    test("an unknown handle and a host outside the service are 404 JSON; one served elsewhere 421", async () => {
      for (const url of [h.at("nobody"), `http://127.0.0.1:${h.port}`, `http://other.localhost:${h.port}`]) {
        for (const path of ["/console", "/chunk-0123abcd.js"]) {
          const answer = await fetch(`${url}${path}`);
          expect({ url, path, status: answer.status }).toEqual({ url, path, status: 404 });
          expect(await (answer as TestResponse).json()).toMatchObject({ ok: false, error: "environment_not_found" });
        }
      }
      const elsewhere = await page(h.at("beta-prod"));
      expect(elsewhere.status).toBe(421);
      expect((await (elsewhere as TestResponse).json()).error).toBe("environment_not_served");
    });
  });
}
