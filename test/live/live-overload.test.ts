import { expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cli, type ServerProcess, serve } from "../support/cli.ts";
import { LiveClient } from "../support/live-client.ts";
import { fixture } from "../support/server.ts";

const SOCKETS = 10;
const PER_SOCKET = 100;

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;

// The server runs in its own process so that the test's clients do not share its event loop: what is
// measured is how long the server takes to answer one caller while another's live queries are refreshed.
test("one caller's live queries at their caps do not slow another caller's writes (p50 within 5× of the same server without them)", async () => {
  const dataDir = mkdtempSync(join(tmpdir(), "actuate-live-overload-"));
  const env = { DATA_DIR: dataDir, SERVICE_KEYS: `overload-key-${crypto.randomUUID()}` };
  const token = async (user: string) =>
    (await cli(["token", "create", "--user", user], env)).stdout.trim().split("\n").at(-1) ?? "";
  let server: ServerProcess | undefined;
  const sockets: LiveClient[] = [];
  try {
    const [subscriber, writer] = [await token("overload-subscriber"), await token("overload-writer")];
    server = await serve(["start", "--release", fixture("data")], env);
    const base = server.url;
    let written = 0;
    const writes = async (count: number) => {
      const latencies: number[] = [];
      for (let i = 0; i < count; i++) {
        const started = performance.now();
        const response = await fetch(`${base}/actions/data.add-note/invoke`, {
          method: "POST",
          headers: { authorization: `Bearer ${writer}`, "content-type": "application/json" },
          body: JSON.stringify({ requestId: crypto.randomUUID(), input: { title: `n${written++}`, priority: i } }),
        });
        expect(response.status).toBe(200);
        await response.arrayBuffer();
        latencies.push(performance.now() - started);
      }
      return latencies;
    };

    await writes(30);
    const alone = median(await writes(60));

    // The subscriber at its caps: 10 sockets of 100 distinct queries, each reading every note written.
    for (let s = 0; s < SOCKETS; s++) {
      const socket = await LiveClient.connect(base);
      sockets.push(socket);
      socket.send({ op: "init", "access-token": subscriber });
      await socket.op("init-ok");
      for (let q = 0; q < PER_SOCKET; q++) {
        const limit = s * PER_SOCKET + q + 1;
        socket.send({ op: "add-query", q: { notes: { $: { limit } } }, "return-type": "tree" });
      }
      for (let q = 0; q < PER_SOCKET; q++) await socket.op("add-query-ok", 30_000);
    }
    const beside = median(await writes(60));
    const ratio = beside / alone;
    console.log(
      `live overload: writer's p50 ${alone.toFixed(1)} ms alone, ${beside.toFixed(1)} ms beside ${SOCKETS * PER_SOCKET} live queries (× ${ratio.toFixed(2)})`,
    );
    // Generous (the machine is shared): it was × 30–50 before refreshes yielded to requests.
    expect(ratio).toBeLessThan(5);
  } finally {
    for (const socket of sockets) socket.close();
    await server?.kill();
    rmSync(dataDir, { recursive: true, force: true });
  }
}, 120_000);
