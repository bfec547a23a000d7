import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { dialects } from "../support/databases.ts";
import { type HostingServer, startHostingServer } from "../support/hosting.ts";
import { fixture } from "../support/server.ts";

// The shared hosting harness itself: two environments of two organizations, each its own release and keys.
for (const dialect of dialects) {
  describe(`hosting harness (${dialect.name})`, () => {
    let hosting: HostingServer;
    beforeAll(async () => {
      hosting = await startHostingServer(dialect, {
        environments: [
          { handle: "acme-prod", organization: "acme", release: fixture("basic") },
          { handle: "beta-prod", organization: "beta", release: fixture("basic-v2") },
        ],
      });
    });
    afterAll(() => hosting?.stop());

    test("each environment serves its own release, and its key only there", async () => {
      const acme = await hosting.key({ environment: "acme-prod" });
      const [own, other] = await Promise.all([
        hosting.fetch("acme-prod", "/releases", { token: acme }),
        hosting.fetch("beta-prod", "/releases", { token: acme }),
      ]);
      expect(own.status).toBe(200);
      expect(other.status).toBe(401);
      const versions = await Promise.all(
        ["acme-prod", "beta-prod"].map(
          async (handle) => (await (await hosting.fetch(handle, "/releases")).json()).items[0].bundleHash,
        ),
      );
      expect(versions[0]).not.toBe(versions[1]);
    });
  });
}
