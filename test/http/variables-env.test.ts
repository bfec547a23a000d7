import { afterEach, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { bundlesDir, type RunningServer, startServer } from "../../src/main.ts";
import { publishRelease } from "../../src/release/publish.ts";
import type { Principal } from "../../src/sdk/index.ts";
import { secretsKeyFile } from "../../src/startup.ts";
import { openStore, sqliteUrlParts } from "../../src/store/open.ts";
import { createSealer } from "../../src/variables/sealing.ts";
import { dialects, selectRows } from "../support/databases.ts";
import { startHostingServer } from "../support/hosting.ts";
import { eventually, fixture, startTestServer, type TestServer } from "../support/server.ts";

const SERVICE: Principal = { kind: "service", id: "test" };
const USER: Principal = { kind: "user", id: "alice" };
const STRIPE_KEY = "sk_live_vars_0123456789abcdef";
const sha256 = (text: string) => new Bun.CryptoHasher("sha256").update(text).digest("hex");

const servers: TestServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.stop();
});

async function server(dialect: (typeof dialects)[number]): Promise<TestServer> {
  const t = await startTestServer(dialect);
  servers.push(t);
  return t;
}

/** Publishes the variables fixture without making it live (its variables may be unset). */
const publishStored = (t: TestServer) =>
  publishRelease({
    store: t.store,
    bundlesDir: bundlesDir(t.config),
    dir: fixture("variables"),
    whenTaken: "refuse",
    shouldActivate: () => false,
  });

const read = async (t: TestServer, token?: string) => {
  const res = await t.invoke("vars.read", {}, { token });
  const { execution } = await res.json();
  expect(execution.status).toBe("succeeded");
  return execution.output;
};

for (const dialect of dialects) {
  describe(`variables reach ctx.env (${dialect.name})`, () => {
    test("a release whose required variables are unset is refused, naming each and the command", async () => {
      const t = await server(dialect);
      // Published with activation: refused before it is stored.
      const refused = await t.publish(fixture("variables")).catch((error) => error);
      expect(refused).toMatchObject({ code: "variables_missing", fields: { missing: ["API_URL", "STRIPE_KEY"] } });
      expect(refused.message).toContain("actuate vars set API_URL");
      expect(refused.message).toContain("actuate vars set STRIPE_KEY --secret");
      expect(await t.store.releases.get("vars1")).toBeNull();

      // Stored, then activated over HTTP: 409 with the names.
      await publishStored(t);
      const activate = await t.fetch("/releases/vars1/activate", { method: "POST" });
      expect(activate.status).toBe(409);
      const body = await activate.json();
      expect(body).toMatchObject({ ok: false, error: "variables_missing", missing: ["API_URL", "STRIPE_KEY"] });
      expect((await t.store.releases.active()).version).toBeNull();

      // One set: the other is still named.
      await t.server.engine.variables.set(SERVICE, "API_URL", { value: "https://api.example", secret: false }, "test");
      const still = await (await t.fetch("/releases/vars1/activate", { method: "POST" })).json();
      expect(still.missing).toEqual(["STRIPE_KEY"]);

      await t.server.engine.variables.set(SERVICE, "STRIPE_KEY", { value: STRIPE_KEY, secret: true }, "test");
      expect((await t.fetch("/releases/vars1/activate", { method: "POST" })).status).toBe(200);
    });

    test("ctx.env: set values over defaults; a change reaches the next invocation without republishing", async () => {
      const t = await server(dialect);
      const admin = t.server.engine.variables;
      // Set before any release declares them.
      await admin.set(SERVICE, "STRIPE_KEY", { value: STRIPE_KEY, secret: true }, "service:test");
      await admin.set(SERVICE, "API_URL", { value: "https://api.example", secret: false }, "service:test");
      await admin.set(SERVICE, "EXTRA", { value: "undeclared", secret: false }, "service:test");
      await t.publish(fixture("variables"));
      await t.server.releases.reload();
      const user = await t.userToken("alice");

      expect(await read(t, user)).toEqual({
        region: "eu",
        apiUrl: "https://api.example",
        extra: "undeclared",
        stripeKeySha256: sha256(STRIPE_KEY),
      });

      await admin.set(SERVICE, "REGION", { value: "us", secret: false }, "service:test");
      expect((await read(t)).region).toBe("us");
      await admin.unset(SERVICE, "REGION");
      expect((await read(t)).region).toBe("eu");
      await admin.unset(SERVICE, "EXTRA");
      expect((await read(t)).extra).toBeNull();
      // Written behind this process's back (the CLI, another instance): the revision poll brings it.
      await t.store.variables.set({
        name: "API_URL",
        secret: false,
        value: "https://changed.example",
        keyId: null,
        updatedAt: Date.now(),
        updatedBy: "cli",
      });
      await eventually(async () => (await read(t)).apiUrl === "https://changed.example");
    });

    test("a workflow's body and its steps, and a scheduled invocation, see the same ctx.env", async () => {
      const t = await server(dialect);
      const admin = t.server.engine.variables;
      await admin.set(SERVICE, "STRIPE_KEY", { value: STRIPE_KEY, secret: true }, "service:test");
      await admin.set(SERVICE, "API_URL", { value: "https://api.example", secret: false }, "service:test");
      await admin.set(SERVICE, "REGION", { value: "ap", secret: false }, "service:test");
      await t.publish(fixture("variables"));
      await t.server.releases.reload();

      const started = await t.invoke("vars.flow", {});
      expect(started.status).toBe(202);
      const { runId } = await started.json();
      const result = await (await t.fetch(`/executions/${runId}/result`)).json();
      expect(result.status).toBe("succeeded");
      const seen = { region: "ap", apiUrl: "https://api.example" };
      expect(result.output).toEqual({ body: seen, step: seen });

      const ticked = await eventually(
        async () =>
          (
            await selectRows(
              t.config.databaseUrl,
              "select output from executions where principal_id = 'schedule:beat' and status = 'succeeded'",
            )
          )[0],
        10_000,
      );
      const stored = ticked?.output;
      const output = typeof stored === "string" ? JSON.parse(stored) : stored;
      expect(output).toMatchObject({
        region: "ap",
        apiUrl: "https://api.example",
        stripeKeySha256: sha256(STRIPE_KEY),
      });
    }, 20_000);

    test("list, set, unset: service keys only; names, sizes and short secrets refused; a secret is never shown", async () => {
      const t = await server(dialect);
      const admin = t.server.engine.variables;
      await admin.set(SERVICE, "STRIPE_KEY", { value: STRIPE_KEY, secret: true }, "service:test");
      await admin.set(SERVICE, "API_URL", { value: "https://api.example", secret: false }, "service:test");
      await t.publish(fixture("variables"));
      await t.server.releases.reload();

      for (const call of [
        () => admin.list(USER),
        () => admin.set(USER, "REGION", { value: "us", secret: false }, "user:alice"),
        () => admin.unset(USER, "API_URL"),
      ]) {
        await expect(call()).rejects.toMatchObject({ code: "access_denied" });
      }
      const listed = await admin.list(SERVICE);
      expect(listed).toEqual([
        expect.objectContaining({
          name: "API_URL",
          secret: false,
          value: "https://api.example",
          set: true,
          required: true,
        }),
        {
          name: "REGION",
          secret: false,
          updatedAt: null,
          updatedBy: null,
          declared: true,
          required: false,
          set: false,
        },
        expect.objectContaining({ name: "STRIPE_KEY", secret: true, set: true, declared: true, required: true }),
      ]);
      expect(JSON.stringify(listed)).not.toContain(STRIPE_KEY);
      expect(listed[2]).not.toHaveProperty("value");
      expect(listed[2]?.updatedBy).toBe("service:test");

      const { variable, created } = await admin.set(
        SERVICE,
        "STRIPE_KEY",
        { value: `${STRIPE_KEY}-2`, secret: true },
        "x",
      );
      expect(created).toBe(false);
      expect(variable).not.toHaveProperty("value");
      await expect(admin.set(SERVICE, "bad-name", { value: "x", secret: false }, "x")).rejects.toMatchObject({
        code: "invalid_variable",
      });
      await expect(admin.set(SERVICE, "PIN", { value: "1234", secret: true }, "x")).rejects.toMatchObject({
        code: "invalid_variable",
      });
      await expect(
        admin.set(SERVICE, "BIG", { value: "x".repeat(64 * 1024 + 1), secret: false }, "x"),
      ).rejects.toMatchObject({ code: "invalid_variable" });
      // Declared a secret: not stored in plain text by mistake.
      await expect(admin.set(SERVICE, "STRIPE_KEY", { value: STRIPE_KEY, secret: false }, "x")).rejects.toMatchObject({
        code: "invalid_variable",
      });
      await expect(admin.unset(SERVICE, "NOT_SET")).rejects.toMatchObject({ code: "variable_not_found" });
      await expect(admin.get(SERVICE, "NOT_SET")).rejects.toMatchObject({ code: "variable_not_found" });
    });

    test("at rest a secret is sealed: the database holds no plaintext of it", async () => {
      const t = await server(dialect);
      await t.server.engine.variables.set(SERVICE, "STRIPE_KEY", { value: STRIPE_KEY, secret: true }, "x");
      await t.server.engine.variables.set(SERVICE, "API_URL", { value: "https://api.example", secret: false }, "x");
      const [row] = await selectRows(
        t.config.databaseUrl,
        "select value, key_id from variables where name = 'STRIPE_KEY'",
      );
      expect(String(row?.value)).toStartWith("v1.");
      expect(String(row?.value)).not.toContain(STRIPE_KEY);
      expect(row?.key_id).toMatch(/^[0-9a-f]{12}$/);
      if (dialect.name === "sqlite") {
        const [file] = sqliteUrlParts(t.config.databaseUrl);
        const dir = join(file as string, "..");
        const files = readdirSync(dir).filter((name) => name.startsWith("test.db"));
        expect(files.length).toBeGreaterThan(0);
        // The database file and its WAL: the plain variable is there (the check sees values), the secret is not.
        const all = Buffer.concat(files.map((name) => readFileSync(join(dir, name))));
        expect(all.includes("https://api.example")).toBe(true);
        expect(all.includes(STRIPE_KEY)).toBe(false);
      } else {
        const dump = await selectRows(t.config.databaseUrl, "select * from variables");
        expect(JSON.stringify(dump)).toContain("https://api.example");
        expect(JSON.stringify(dump)).not.toContain(STRIPE_KEY);
      }
    });

    test("a server without a key refuses to store a secret, naming SECRETS_KEY", async () => {
      const t = await server(dialect);
      const keyless = await startServer(t.config, { store: t.store, log: () => {}, sealer: null });
      try {
        await expect(
          keyless.engine?.variables.set(SERVICE, "STRIPE_KEY", { value: STRIPE_KEY, secret: true }, "x"),
        ).rejects.toMatchObject({ code: "secrets_key_required", message: expect.stringContaining("SECRETS_KEY") });
        // A plain variable needs no key.
        await keyless.engine?.variables.set(SERVICE, "REGION", { value: "us", secret: false }, "x");
      } finally {
        await keyless.stop();
      }
    });
  });
}

const pg = dialects.find((d) => d.name === "postgres");
describe.if(pg !== undefined)("two instances on PostgreSQL", () => {
  test("a variable set through one reaches the other's next invocation within the poll bound", async () => {
    const t = await server(pg as NonNullable<typeof pg>);
    const admin = t.server.engine.variables;
    await admin.set(SERVICE, "STRIPE_KEY", { value: STRIPE_KEY, secret: true }, "x");
    await admin.set(SERVICE, "API_URL", { value: "https://api.example", secret: false }, "x");
    await t.publish(fixture("variables"));
    const otherStore = await openStore(t.config.databaseUrl);
    let other: RunningServer | null = null;
    try {
      other = await startServer(t.config, { store: otherStore, log: () => {} });
      const readOther = async () => {
        const res = await fetch(`${other?.url}/actions/vars.read/invoke`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${t.serviceKey}` },
          body: JSON.stringify({ requestId: crypto.randomUUID(), input: {} }),
        });
        // biome-ignore lint/suspicious/noExplicitAny: the answer's shape is what the test asserts.
        return ((await res.json()) as any).execution.output;
      };
      expect(await readOther()).toMatchObject({ region: "eu", stripeKeySha256: sha256(STRIPE_KEY) });
      const setAt = Date.now();
      await admin.set(SERVICE, "REGION", { value: "us", secret: false }, "x");
      await admin.set(SERVICE, "STRIPE_KEY", { value: `${STRIPE_KEY}-rotated`, secret: true }, "x");
      await eventually(async () => (await readOther()).stripeKeySha256 === sha256(`${STRIPE_KEY}-rotated`));
      // RELEASE_POLL_MS is 50 in tests: well within a second.
      expect(Date.now() - setAt).toBeLessThan(1_000);
      expect((await readOther()).region).toBe("us");
    } finally {
      await other?.stop();
      await otherStore.close();
    }
  }, 20_000);
});

for (const dialect of dialects) {
  describe(`variables in hosting mode (${dialect.name})`, () => {
    test("each environment has its own; a change reaches the service loops' next invocation; the refusal names the handle", async () => {
      const hosting = await startHostingServer(dialect, {
        environments: [
          { handle: "acme-prod", organization: "acme" },
          { handle: "acme-dev", organization: "acme" },
        ],
      });
      const second = dialect.name === "postgres" ? await hosting.another() : null;
      try {
        const refused = await hosting.publish("acme-prod", fixture("variables")).catch((error) => error);
        expect(refused).toMatchObject({ code: "variables_missing" });
        expect(refused.message).toContain("not set in acme-prod: API_URL, STRIPE_KEY");
        expect(refused.message).toContain("actuate vars set acme-prod STRIPE_KEY --secret");

        // Set as the CLI does: the store and the sealer of the shared key (dev's key file here).
        const sealer = await createSealer(secretsKeyFile(hosting.dataDir));
        const setIn = async (handle: string, name: string, value: string, secret = false) =>
          hosting.store.environment(await hosting.id(handle)).variables.set({
            name,
            secret,
            value: secret ? await sealer.seal(name, value) : value,
            keyId: secret ? sealer.keyId : null,
            updatedAt: Date.now(),
            updatedBy: "cli",
          });
        for (const handle of ["acme-prod", "acme-dev"]) {
          await setIn(handle, "STRIPE_KEY", `${STRIPE_KEY}-${handle}`, true);
          await setIn(handle, "API_URL", `https://${handle}.example`);
          await hosting.publish(handle, fixture("variables"));
        }
        const readIn = async (server: typeof hosting, handle: string) => {
          const res = await server.invoke(handle, "vars.read", {});
          return (await res.json()).execution.output;
        };
        for (const server of second ? [hosting, second] : [hosting]) {
          await eventually(async () => (await readIn(server, "acme-dev"))?.apiUrl === "https://acme-dev.example");
          expect(await readIn(server, "acme-prod")).toEqual({
            region: "eu",
            apiUrl: "https://acme-prod.example",
            extra: null,
            stripeKeySha256: sha256(`${STRIPE_KEY}-acme-prod`),
          });
        }
        await setIn("acme-prod", "REGION", "us");
        for (const server of second ? [hosting, second] : [hosting]) {
          await eventually(async () => (await readIn(server, "acme-prod")).region === "us");
          expect((await readIn(server, "acme-dev")).region).toBe("eu");
        }
      } finally {
        await hosting.stop();
      }
    }, 30_000);
  });
}
