import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { importJWK, SignJWT } from "jose";
import { Authenticator } from "../../src/auth/authenticator.ts";
import { authorityKeys, publicKeySet } from "../../src/auth/authority/keys.ts";
import { JwtVerifier } from "../../src/auth/jwt.ts";
import { GRANT_CLAIM, SignIns } from "../../src/auth/sign-ins.ts";
import { createUserToken, hashSecret, revokeUserToken } from "../../src/auth/tokens.ts";
import { openStore } from "../../src/store/open.ts";
import type { Store } from "../../src/store/store.ts";
import { dialects, type TestDatabase } from "../support/databases.ts";
import { storeGrant } from "../support/oauth-client.ts";

/** The caller a header names, or null: the Authenticator's answer as these tests read it. */
const principalOf = async (auth: Authenticator, header: string | null) => {
  const authentication = await auth.authenticate(header);
  return "principal" in authentication ? authentication.principal : null;
};

/** TOKEN_RECHECK_MS as by default: the revocation bound. */
const RECHECK_MS = 1_000;

for (const dialect of dialects) {
  describe(`Authenticator (${dialect.name})`, () => {
    let database: TestDatabase;
    let store: Store;
    /** The authenticator's clock: tests move it instead of waiting. */
    let clock = 1_000_000;
    let auth: Authenticator;
    beforeAll(async () => {
      database = await dialect.create();
      store = await openStore(database.url);
      auth = new Authenticator(store, ["service-key-one"], RECHECK_MS, null, () => clock);
    });
    afterAll(async () => {
      await store.close();
      await database.drop();
    });

    test("a revoked user token is refused once TOKEN_RECHECK_MS (1 s) has passed since the store last vouched for it", async () => {
      const { token } = await createUserToken(store, "rita");
      const vouchedAt = clock;
      expect(await principalOf(auth, `Bearer ${token}`)).toEqual({ kind: "user", id: "rita" });
      await revokeUserToken(store, token);
      // Within the bound the answer remembered is taken; from the bound on, the store is asked again.
      clock = vouchedAt + RECHECK_MS - 1;
      expect(await auth.resolveToken(token)).toEqual({ kind: "user", id: "rita" });
      clock = vouchedAt + RECHECK_MS;
      expect(await auth.resolveToken(token)).toBeNull();
      // And it stays refused: a refusal is not remembered as anything else.
      clock += 10 * RECHECK_MS;
      expect(await auth.resolveToken(token)).toBeNull();
    });

    test("a live token stays accepted after the bound: the store is asked again and vouches again", async () => {
      const { token } = await createUserToken(store, "sam");
      expect(await auth.resolveToken(token)).toEqual({ kind: "user", id: "sam" });
      clock += RECHECK_MS;
      expect(await auth.resolveToken(token)).toEqual({ kind: "user", id: "sam" });
    });

    test("an unknown credential is not remembered: the store is asked every time", async () => {
      const token = `act_u_${crypto.randomUUID()}`;
      expect(await auth.resolveToken(token)).toBeNull();
      await store.tokens.insert({
        id: Bun.randomUUIDv7(),
        tokenHash: hashSecret(token),
        prefix: token.slice(0, 14),
        userId: "tess",
        createdAt: clock,
        revokedAt: null,
      });
      expect(await auth.resolveToken(token)).toEqual({ kind: "user", id: "tess" });
    });

    test("with TOKEN_RECHECK_MS=0 every request asks the store: a revoked token is refused at once", async () => {
      const asking = new Authenticator(store, [], 0, null, () => clock);
      const { token } = await createUserToken(store, "una");
      expect(await asking.resolveToken(token)).toEqual({ kind: "user", id: "una" });
      await revokeUserToken(store, token);
      expect(await asking.resolveToken(token)).toBeNull();
    });

    test("an access token of the built-in authority is refused once TOKEN_RECHECK_MS has passed since its grant was revoked", async () => {
      const issuer = "http://127.0.0.1:1";
      const keys = await authorityKeys(store.oauth, clock);
      const signIns = new SignIns({ store });
      const jwt = new JwtVerifier({
        issuer: () => issuer,
        audiences: () => [issuer],
        userClaim: "sub",
        refetchMs: 30_000,
        localKeys: async () => publicKeySet(keys),
        signInActive: (user, claims) => signIns.active(user, claims),
      });
      const signedIn = new Authenticator(store, [], RECHECK_MS, jwt, () => clock);
      const accessToken = async (claims: Record<string, unknown>) =>
        new SignJWT(claims)
          .setProtectedHeader({ alg: "RS256", kid: keys.signing.kid })
          .setIssuer(issuer)
          .setAudience(issuer)
          .setSubject("gina")
          .setExpirationTime("1h")
          .sign(await importJWK(keys.signing, "RS256"));
      await store.users.insert({ id: "gina", passwordHash: "-", createdAt: clock, disabledAt: null });
      const grant = await storeGrant(store, "gina");
      const token = await accessToken({ [GRANT_CLAIM]: grant });
      const vouchedAt = clock;
      expect(await signedIn.resolveToken(token)).toMatchObject({ kind: "user", id: "gina" });
      await store.oauth.revokeGrant(grant);
      // Within the bound the answer remembered is taken (no read per request); from the bound on, refused.
      clock = vouchedAt + RECHECK_MS - 1;
      expect(await signedIn.resolveToken(token)).toMatchObject({ kind: "user", id: "gina" });
      clock = vouchedAt + RECHECK_MS;
      expect(await signedIn.resolveToken(token)).toBeNull();
      // A token that names no grant, or another person's, names no sign-in of this person.
      const hugos = await storeGrant(store, "hugo");
      expect(await signedIn.resolveToken(await accessToken({}))).toBeNull();
      expect(await signedIn.resolveToken(await accessToken({ [GRANT_CLAIM]: hugos }))).toBeNull();
    });

    test("a service key is recognised by its hash, and named by it; anything else is not a service", async () => {
      expect(await principalOf(auth, "Bearer service-key-one")).toEqual({
        kind: "service",
        id: `service-${hashSecret("service-key-one").slice(0, 12)}`,
      });
      expect(await principalOf(auth, "Bearer service-key-two")).toBeNull();
      expect(await principalOf(auth, "Basic service-key-one")).toBeNull();
      expect(await principalOf(auth, null)).toBeNull();
    });

    test("stillValid answers, in one pass, which tokens still sign someone in (the live sessions' check)", async () => {
      const kept = (await createUserToken(store, "sven")).token;
      const gone = (await createUserToken(store, "sven")).token;
      await revokeUserToken(store, gone);
      const many = await Promise.all(Array.from({ length: 600 }, () => createUserToken(store, "many")));
      const valid = await auth.stillValid([
        kept,
        gone,
        "act_u_unknown",
        "service-key-one",
        ...many.map((m) => m.token),
      ]);
      expect(valid.has(kept)).toBe(true);
      expect(valid.has("service-key-one")).toBe(true);
      expect(valid.has(gone)).toBe(false);
      expect(valid.has("act_u_unknown")).toBe(false);
      // More than one lookup's worth (500) are all answered.
      expect(many.every((m) => valid.has(m.token))).toBe(true);
    });
  });
}
