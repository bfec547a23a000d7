import type { Adapter, AdapterPayload } from "oidc-provider";
import type { OAuthStore } from "../../store/oauth.ts";
import type { OAuthRecord } from "../../store/rows.ts";

/** oidc-provider's storage contract over the store, so every instance shares clients, grants and tokens. */
export function storeAdapter(store: OAuthStore, now: () => number) {
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
      return payloadOf(await store.find(this.model, id, now()));
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
