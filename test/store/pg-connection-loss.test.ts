import { afterEach, describe, expect, test } from "bun:test";
import type { Socket } from "bun";
import { openStore } from "../../src/store/open.ts";
import type { Store } from "../../src/store/store.ts";
import { dialects, type TestDatabase } from "../support/databases.ts";
import { runRows } from "./fixture.ts";

const pg = dialects.find((d) => d.name === "postgres");

/**
 * A relay in front of PostgreSQL that, once armed, cuts the first connection on which the client sends
 * `marker` (a statement's text), as a database that goes away at that moment would. Then it relays again.
 */
function cuttingRelay(postgresPort: number) {
  let marker: string | null = null;
  let cuts = 0;
  const relay = Bun.listen<{ upstream: Socket<undefined> | null; pending: Uint8Array[] }>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(client) {
        client.data = { upstream: null, pending: [] };
        Bun.connect({
          hostname: "127.0.0.1",
          port: postgresPort,
          socket: {
            open(upstream) {
              client.data.upstream = upstream;
              for (const chunk of client.data.pending) upstream.write(chunk);
              client.data.pending = [];
            },
            data: (_upstream, data) => void client.write(data),
            close: () => void client.end(),
            error: () => void client.end(),
          },
        }).catch(() => client.end());
      },
      data(client, data) {
        if (marker !== null && Buffer.from(data).includes(marker)) {
          marker = null;
          cuts++;
          client.data.upstream?.end();
          client.end();
          return;
        }
        if (client.data.upstream) client.data.upstream.write(data);
        else client.data.pending.push(new Uint8Array(data));
      },
      close: (client) => void client.data.upstream?.end(),
    },
  });
  return {
    port: relay.port,
    cutOn(text: string) {
      marker = text;
    },
    cuts: () => cuts,
    stop: () => relay.stop(true),
  };
}

describe.skipIf(!pg)("a PostgreSQL connection cut under the driver (postgres-js)", () => {
  let database: TestDatabase;
  let relay: ReturnType<typeof cuttingRelay>;
  let store: Store | null = null;

  const openThroughRelay = async () => {
    database = await (pg as NonNullable<typeof pg>).create();
    const url = new URL(database.url);
    relay = cuttingRelay(Number(url.port || 5432));
    url.host = `127.0.0.1:${relay.port}`;
    return url.toString();
  };

  afterEach(async () => {
    await store?.close();
    store = null;
    relay.stop();
    await database.drop();
  }, 20_000);

  test("while a new connection reserved for a batch of run writes reads the array types: nothing is left unhandled, the writes are made alone", async () => {
    const url = await openThroughRelay();
    store = await openStore(url);
    const { execution, run } = runRows();
    // The store has made no connection of its own yet: the batch's reservation makes the first one. The
    // driver forgets that reservation when the connection is cut there; the batch gives it up in time.
    relay.cutOn("pg_catalog.pg_type");
    expect(await store.runs.admit(execution, run)).toMatchObject({ created: true });
    expect(relay.cuts()).toBe(1);
    expect((await store.runs.get(run.id))?.id).toBe(run.id);
  }, 30_000);

  test("under a batch of run writes pipelined on a reserved connection: each write is made again alone, and the pool stays whole", async () => {
    const url = await openThroughRelay();
    store = await openStore(url);
    const { execution, run } = runRows();
    relay.cutOn("begin");
    expect(await store.runs.admit(execution, run)).toMatchObject({ created: true });
    expect(relay.cuts()).toBe(1);
    // Every connection of the pool answers (one handed back without its socket would fail, or end the process).
    const reads = await Promise.all(Array.from({ length: 30 }, () => store?.runs.get(run.id)));
    expect(reads.map((r) => r?.id)).toEqual(Array(30).fill(run.id));
  }, 20_000);
});
