import { describe } from "bun:test";
import { openStore } from "../../src/store/open.ts";
import { dialects } from "../support/databases.ts";
import { consoleStoreContract } from "./console-store.contract.ts";
import { controlStoreContract } from "./control-store.contract.ts";
import { dataStoreContract } from "./data-store.contract.ts";
import { delayedInvocationStoreContract } from "./delayed-invocation-store.contract.ts";
import { executionLogStoreContract } from "./execution-log-store.contract.ts";
import { executionStoreContract } from "./execution-store.contract.ts";
import { fileStoreContract } from "./file-store.contract.ts";
import type { OpenStores } from "./fixture.ts";
import { retentionStoreContract } from "./retention-store.contract.ts";
import { runStoreContract } from "./run-store.contract.ts";
import { scheduleStoreContract } from "./schedule-store.contract.ts";

for (const dialect of dialects) {
  /** A fresh database per test; on PostgreSQL the peer is a second instance on it. */
  const open: OpenStores = async () => {
    const database = await dialect.create();
    const store = await openStore(database.url);
    const peer = dialect.name === "postgres" ? await openStore(database.url) : store;
    return {
      store,
      peer,
      async close() {
        await store.close();
        if (peer !== store) await peer.close();
        await database.drop();
      },
    };
  };

  describe(`run store contract (${dialect.name})`, () => runStoreContract(open));
  describe(`execution store contract (${dialect.name})`, () => executionStoreContract(open));
  describe(`execution log store contract (${dialect.name})`, () => executionLogStoreContract(open));
  describe(`retention store contract (${dialect.name})`, () => retentionStoreContract(open));
  describe(`data store contract (${dialect.name})`, () => dataStoreContract(open));
  describe(`schedule store contract (${dialect.name})`, () => scheduleStoreContract(open));
  describe(`delayed invocation store contract (${dialect.name})`, () => delayedInvocationStoreContract(open));
  describe(`console lists and counts contract (${dialect.name})`, () => consoleStoreContract(open));
  describe(`file store contract (${dialect.name})`, () => fileStoreContract(open));
  describe(`control store contract (${dialect.name})`, () => controlStoreContract(dialect));
}
