import type { Adapter, AdapterPayload } from "oidc-provider";
import type { OAuthStore } from "../../store/oauth.ts";
import type { OAuthRecord } from "../../store/rows.ts";
import { hashSecret } from "../tokens.ts";
import { fetchClientDocument, isClientDocumentUrl } from "./client-documents.ts";

/** A client known by its metadata document is read again after this long. */
const CLIENT_DOCUMENT_TTL_S = 3600;

/**
 * Models whose id is a bearer secret: a token, a code, a registration's access token, the session
 * cookie's value. They are stored under a hash of the id (and without it in the payload), so a copy of
 * the table holds none that works. (Device codes and CIBA requests would be too, but are not enabled:
 * a device code is found by its user code and saved again, which needs its id.)
 */
const SECRET_IDS = new Set(["AccessToken", "AuthorizationCode", "RefreshToken", "RegistrationAccessToken", "Session"]);

/**
 * A refresh token used less than this long ago refreshes again, from the same grant: an agent that
 * sends several calls at once when its access token expired refreshes once per call, all with the same
 * token. Past it, a reuse is what it looks like (a stolen token) and the authority revokes the grant.
 */
export const REFRESH_GRACE_MS = 30_000;

/**
 * oidc-provider's storage contract over the store, so every instance shares clients, grants and
 * tokens. A client id that is a metadata document's URL is fetched on first use and kept an hour.
 */
export function storeAdapter(store: OAuthStore, now: () => number, allowLoopbackHttp: boolean) {
  return class StoreAdapter implements Adapter {
    private readonly secretIds: boolean;

    constructor(private readonly model: string) {
      this.secretIds = SECRET_IDS.has(model);
    }

    async upsert(id: string, payload: AdapterPayload, expiresIn: number): Promise<void> {
      await store.upsert({
        model: this.model,
        id: this.storedId(id),
        payload: this.storedPayload(payload),
        grantId: payload.grantId ?? null,
        accountId: payload.accountId ?? null,
        uid: payload.uid ?? null,
        userCode: payload.userCode ?? null,
        expiresAt: expiresIn ? now() + expiresIn * 1000 : null,
        consumedAt: typeof payload.consumed === "number" ? payload.consumed * 1000 : null,
      });
    }

    async find(id: string) {
      const stored = this.payloadOf(await store.find(this.model, this.storedId(id), now()), id);
      if (stored || this.model !== "Client" || !isClientDocumentUrl(id, allowLoopbackHttp)) return stored;
      const document = await fetchClientDocument(id);
      if (document) await this.upsert(id, document, CLIENT_DOCUMENT_TTL_S);
      return document;
    }

    // A session found by its uid comes without its id (only the hash is stored): oidc-provider reads
    // such a session (is it there, whose is it) but never saves it.
    async findByUid(uid: string) {
      return this.payloadOf(await store.findByUid(this.model, uid, now()));
    }

    async findByUserCode(userCode: string) {
      return this.payloadOf(await store.findByUserCode(this.model, userCode, now()));
    }

    async consume(id: string): Promise<void> {
      await store.consume(this.model, this.storedId(id), now());
    }

    async destroy(id: string): Promise<void> {
      await store.destroy(this.model, this.storedId(id));
    }

    async revokeByGrantId(grantId: string): Promise<void> {
      await store.revokeGrant(grantId);
    }

    private storedId(id: string): string {
      return this.secretIds ? hashSecret(id) : id;
    }

    private storedPayload(payload: AdapterPayload): Record<string, unknown> {
      if (this.secretIds) {
        const { jti: _, ...rest } = payload;
        return rest;
      }
      // An interaction keeps its session's id (`session.cookie`), which oidc-provider never reads back.
      if (this.model === "Interaction" && payload.session) {
        const { cookie: _, ...session } = payload.session as Record<string, unknown>;
        return { ...payload, session };
      }
      return payload as Record<string, unknown>;
    }

    private payloadOf(record: OAuthRecord | null, id?: string): AdapterPayload | undefined {
      if (!record) return undefined;
      const payload = (
        id !== undefined && this.secretIds ? { ...record.payload, jti: id } : record.payload
      ) as AdapterPayload;
      if (record.consumedAt === null) return payload;
      if (this.model === "RefreshToken" && now() - record.consumedAt < REFRESH_GRACE_MS) return payload;
      return { ...payload, consumed: Math.floor(record.consumedAt / 1000) };
    }
  };
}
