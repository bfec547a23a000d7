import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { dialects } from "../support/databases.ts";
import { type HostingServer, startHostingServer } from "../support/hosting.ts";
import { fixture } from "../support/server.ts";
import { storages } from "../support/storages.ts";

/**
 * Files a fork shares with its source, over real HTTP on a hosting-mode server: each environment's
 * storage API on its own host, the source's delete through the control API on the apex.
 */
for (const dialect of dialects) {
  for (const storage of storages) {
    describe(`files shared with a fork over HTTP (${dialect.name}, ${storage.name})`, () => {
      let t: HostingServer;
      let source: number;

      beforeAll(async () => {
        t = await startHostingServer(dialect, {
          env: await storage.env(),
          environments: [{ handle: "acme-prod", organization: "acme", release: fixture("basic") }],
        });
        source = await t.id("acme-prod");
      });
      afterAll(async () => {
        await t.stop();
        await storage.release();
      });

      const upload = (handle: string, path: string, text: string, token?: string | null) =>
        t.fetch(handle, "/storage/upload", {
          method: "PUT",
          headers: { path, "content-type": "text/plain" },
          body: text,
          token,
        });
      /** The text a browser downloads through the environment's signed URL; null when it is 404. */
      const download = async (handle: string, path: string): Promise<string | null> => {
        const signed = await t.fetch(handle, `/storage/signed-download-url?filename=${encodeURIComponent(path)}`);
        if (signed.status === 404) return null;
        expect(signed.status).toBe(200);
        const response = await fetch((await signed.json()).url);
        expect(response.status).toBe(200);
        return response.text();
      };
      /** `env fork acme-prod acme-pr-42 --data`, as the store makes it. */
      const fork = async () => {
        const organization = (await t.store.control.organizations.byHandle("acme"))?.id as number;
        const target = {
          handle: "acme-pr-42",
          organization,
          at: Date.now(),
          data: true,
          secrets: false,
          expiresAt: null,
        };
        await t.store.control.environments.fork(source, target);
      };

      test("the fork downloads the source's bytes; each side's writes stay its own; the source's delete leaves the fork whole", async () => {
        expect((await upload("acme-prod", "docs/a.txt", "prod v1")).status).toBe(200);
        expect((await upload("acme-prod", "docs/b.txt", "prod b")).status).toBe(200);
        await fork();
        expect(await download("acme-pr-42", "docs/a.txt")).toBe("prod v1");

        expect((await upload("acme-prod", "docs/a.txt", "prod v2")).status).toBe(200);
        expect(await download("acme-prod", "docs/a.txt")).toBe("prod v2");
        expect(await download("acme-pr-42", "docs/a.txt")).toBe("prod v1");

        expect((await upload("acme-pr-42", "docs/b.txt", "fork b")).status).toBe(200);
        expect(await download("acme-prod", "docs/b.txt")).toBe("prod b");
        expect(await download("acme-pr-42", "docs/b.txt")).toBe("fork b");

        const deleted = await t.fetch(null, "/environments/acme-prod?confirm=true", { method: "DELETE" });
        expect(deleted.status).toBe(200);
        expect(await download("acme-pr-42", "docs/a.txt")).toBe("prod v1");
        expect(await download("acme-pr-42", "docs/b.txt")).toBe("fork b");
        const listed = await (await t.fetch("acme-pr-42", "/storage/files")).json();
        expect(listed.items.map((file: { path: string }) => file.path)).toEqual(["docs/a.txt", "docs/b.txt"]);
      });

      test("a fork's storage takes no caller without a credential", async () => {
        const refused = await upload("acme-pr-42", "docs/a.txt", "anonymous", null);
        expect(refused.status).toBe(401);
        expect(await refused.json()).toMatchObject({ ok: false, error: "unauthorized" });
        expect(await download("acme-pr-42", "docs/a.txt")).toBe("prod v1");
      });
    });
  }
}
