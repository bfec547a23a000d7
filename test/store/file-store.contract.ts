import { describe, expect, test } from "bun:test";
import type { Store } from "../../src/store/store.ts";
import { at, type OpenStores, storesPerTest } from "./fixture.ts";

const HOUR = 3_600_000;

/** What every dialect's file store promises of signed upload grants (run by test/store/contracts.test.ts). */
export function fileStoreContract(open: OpenStores) {
  let store: Store;
  let peer: Store;
  storesPerTest(open, (opened) => {
    ({ store, peer } = opened);
  });

  describe("files: signed upload grants", () => {
    test("a grant is spent once, on any instance; a refund makes it spendable again", async () => {
      expect(await store.files.spendUploadGrant("g1", at(HOUR), at(0))).toBe(true);
      expect(await peer.files.spendUploadGrant("g1", at(HOUR), at(1))).toBe(false);
      expect(await store.files.spendUploadGrant("g1", at(HOUR), at(2))).toBe(false);
      expect(await store.files.spendUploadGrant("g2", at(HOUR), at(3))).toBe(true);
      await peer.files.refundUploadGrant("g1");
      expect(await store.files.spendUploadGrant("g1", at(HOUR), at(4))).toBe(true);
      expect(await peer.files.spendUploadGrant("g1", at(HOUR), at(5))).toBe(false);
    });

    test("concurrent spends of one grant: exactly one succeeds", async () => {
      const spends = await Promise.all(
        Array.from({ length: 8 }, (_, i) => (i % 2 ? peer : store).files.spendUploadGrant("g", at(HOUR), at(0))),
      );
      expect(spends.filter(Boolean)).toHaveLength(1);
    });

    test("a spent grant is remembered for an hour past its expiry, then forgotten", async () => {
      expect(await store.files.spendUploadGrant("old", at(10), at(0))).toBe(true);
      // Just past its expiry (a request that verified it in time, a clock behind): still spent.
      expect(await peer.files.spendUploadGrant("old", at(10), at(11))).toBe(false);
      expect(await peer.files.spendUploadGrant("old", at(10), at(10 + HOUR))).toBe(false);
      // Any spend after that forgets it (it could not be verified any more anyway).
      expect(await peer.files.spendUploadGrant("other", at(2 * HOUR), at(11 + HOUR))).toBe(true);
      expect(await store.files.spendUploadGrant("old", at(10), at(12 + HOUR))).toBe(true);
    });
  });
}
