import type { Adapter, AdapterPayload } from "oidc-provider";
import type { OAuthStore } from "../../store/oauth.ts";
import type { OAuthRecord } from "../../store/rows.ts";
import { fetchClientDocument, isClientDocumentUrl } from "./client-documents.ts";

/** A client known by its metadata document is read again after this long. */
const CLIENT_DOCUMENT_TTL_S = 3600;

/**
 * oidc-provider's storage contract over the store, so every instance shares clients, grants and
 * tokens. A client id that is a metadata document's URL is fetched on first use and kept an hour.
 */
export function storeAdapter(store: OAuthStore, now: () => number, allowLoopbackHttp: boolean) {
  const payloadOf = (record: OAuthRecord | null): AdapterPayload | undefined => {
    if (!record) return undefined;
    const payload = record.payload as AdapterPayload;
    return record.consumedAt === null ? payload : { ...payload, consumed: Math.floor(record.consumedAt / 1000) };
  };
  return class StoreAdapter implements Adapter {
    constructor(private readonly model: string) {}

    async upsert(id: string, payload: AdapterPayload, expiresIn: number): Promise<void> {
      await store.upsert({
        model: this.model,
        id,
        payload: payload as Record<string, unknown>,
        grantId: payload.grantId ?? null,
        accountId: payload.accountId ?? null,
        uid: payload.uid ?? null,
        userCode: payload.userCode ?? null,
        expiresAt: expiresIn ? now() + expiresIn * 1000 : null,
        consumedAt: typeof payload.consumed === "number" ? payload.consumed * 1000 : null,
      });
    }

    async find(id: string) {
      const stored = payloadOf(await store.find(this.model, id, now()));
      if (stored || this.model !== "Client" || !isClientDocumentUrl(id, allowLoopbackHttp)) return stored;
      const document = await fetchClientDocument(id);
      if (document) await this.upsert(id, document, CLIENT_DOCUMENT_TTL_S);
      return document;
    }

    async findByUid(uid: string) {
      return payloadOf(await store.findByUid(this.model, uid, now()));
    }

    async findByUserCode(userCode: string) {
      return payloadOf(await store.findByUserCode(this.model, userCode, now()));
    }

    async consume(id: string): Promise<void> {
      await store.consume(this.model, id, now());
    }

    async destroy(id: string): Promise<void> {
      await store.destroy(this.model, id);
    }

    async revokeByGrantId(grantId: string): Promise<void> {
      await store.revokeGrant(grantId);
    }
  };
}
