import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { addUser } from "../../src/auth/users.ts";
import { cli } from "../support/cli.ts";
import { dialects } from "../support/databases.ts";
import { beginSignIn, type MemoryClientProvider, signedInClient, signInOnPages } from "../support/oauth-client.ts";
import { fixture, startTestServer, type TestServer } from "../support/server.ts";

// Signing in hashes passwords (argon2id) several times a test, and the CLI starts processes.
setDefaultTimeout(60_000);

const password = "correct horse battery staple";
const DISABLED = "This account is disabled";
const WRONG = "Wrong user or password.";

for (const dialect of dialects) {
  describe(`people of the built-in authority (${dialect.name})`, () => {
    let t: TestServer;
    let env: Record<string, string>;
    /** A sign-in of erin's from before she was disabled. */
    let laptop: MemoryClientProvider;

    beforeAll(async () => {
      t = await startTestServer(dialect, { release: fixture("claims") });
      env = { DATABASE_URL: t.config.databaseUrl, DATA_DIR: t.config.dataDir };
      await addUser(t.store, "erin", password);
    });

    afterAll(async () => {
      await t?.stop();
    });

    const signedIn = (user: string) => signedInClient(t.url, user, password);

    /** A refresh with the client's refresh token: its status. */
    const refresh = async (provider: MemoryClientProvider) =>
      (
        await fetch(`${t.url}/oauth/token`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({
            grant_type: "refresh_token",
            refresh_token: provider.saved?.refresh_token as string,
            client_id: provider.client?.client_id as string,
          }),
        })
      ).status;

    async function whoami(provider: MemoryClientProvider) {
      const client = new Client({ name: "test-agent", version: "1.0.0" });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${t.url}/mcp`), { authProvider: provider }));
      try {
        return ((await client.callTool({ name: "whoami.get", arguments: {} })) as { structuredContent?: unknown })
          .structuredContent;
      } finally {
        await client.close();
      }
    }

    const signInPage = async (user: string, secret: string) =>
      (await signInOnPages((await beginSignIn(t.url)).authorizationUrl.toString(), user, secret)).consent;

    test("user disable says how many sign-ins it ended; the disabled person is told so only with the right password", async () => {
      laptop = await signedIn("erin");
      await signedIn("erin");

      const disabled = await cli(["user", "disable", "erin"], env);
      expect(disabled.code).toBe(0);
      expect(disabled.stdout).toContain("disabled user erin; 0 token(s) revoked, 2 sign-in(s) ended");
      expect(await refresh(laptop)).toBe(400);

      const right = await signInPage("erin", password);
      expect(right.status).toBe(403);
      expect(right.html).toContain(DISABLED);
      // A wrong password and an unknown user keep the one answer, which names neither.
      for (const [user, secret] of [
        ["erin", "not the password"],
        ["nobody", password],
      ] as const) {
        const refused = await signInPage(user, secret);
        expect(refused.status).toBe(401);
        expect(refused.html).toContain(WRONG);
        expect(refused.html).not.toContain(DISABLED);
      }
    });

    test("user enable lets the person sign in again; the sign-ins that disabling ended stay ended", async () => {
      const enabled = await cli(["user", "enable", "erin"], env);
      expect(enabled.code).toBe(0);
      expect(enabled.stdout).toContain("enabled user erin");
      expect(await refresh(laptop)).toBe(400);
      // Its access token (a JWT of up to an hour) names a grant that disabling deleted.
      const stale = await fetch(`${t.url}/actions`, {
        headers: { authorization: `Bearer ${laptop.saved?.access_token}` },
      });
      expect(stale.status).toBe(401);

      const provider = await signedIn("erin");
      expect(await whoami(provider)).toEqual({ kind: "user", id: "erin", role: null });

      expect((await cli(["user", "list"], env)).stdout).toMatch(/\nerin\s+\S+Z\s+-\n/);
      expect((await cli(["user", "enable", "erin"], env)).stdout).toContain("user erin is not disabled");
      const unknown = await cli(["user", "enable", "nobody"], env);
      expect(unknown.code).toBe(1);
      expect(unknown.stderr).toContain("no user nobody");
    });
  });
}
