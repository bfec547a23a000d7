import { connect, createServer, type Socket } from "node:net";

/**
 * A TCP relay in front of a server that can stop passing on what the server sends. Paused, it stops
 * reading the server's side, so the server's messages pile up in the kernel's buffers and then in the
 * server's own, as for a client that stopped reading (a frozen tab, a slow network); resumed, it
 * passes everything on. What clients send always goes through.
 */
export async function pausableProxy(port: number) {
  const links = new Set<{ client: Socket; upstream: Socket }>();
  let paused = false;
  const relay = createServer((client) => {
    const upstream = connect({ host: "127.0.0.1", port });
    const link = { client, upstream };
    links.add(link);
    client.pipe(upstream);
    if (paused) upstream.pause();
    else upstream.pipe(client);
    // Each side's end is passed on once what came before it was written (the server's close frame last).
    for (const [socket, other] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      socket.on("close", () => {
        links.delete(link);
        other.end();
      });
      socket.on("error", () => other.destroy());
    }
  });
  await new Promise<void>((resolve) => relay.listen(0, "127.0.0.1", resolve));
  const address = relay.address();
  if (address === null || typeof address === "string") throw new Error("the relay has no TCP address");
  return {
    url: `http://127.0.0.1:${address.port}`,
    pause() {
      paused = true;
      for (const { client, upstream } of links) {
        upstream.unpipe(client);
        upstream.pause();
      }
    },
    resume() {
      paused = false;
      for (const { client, upstream } of links) upstream.pipe(client);
    },
    /** Cuts every open connection (a network failing). */
    cut() {
      for (const { client, upstream } of links) {
        client.destroy();
        upstream.destroy();
      }
    },
    stop() {
      for (const { client, upstream } of links) {
        client.destroy();
        upstream.destroy();
      }
      relay.close();
    },
  };
}
