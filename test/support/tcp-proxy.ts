import type { Socket } from "bun";

interface Link {
  upstream: Socket<Link> | null;
  pending: Uint8Array[];
  dropAnswer: boolean;
}

/**
 * A TCP relay on a loopback port in front of a server whose port may change (a restart): tests
 * point clients at it to keep one address, and can make it drop the next connection right after the
 * server answered (the answer never arrives: the server did the work, the client saw the line go down).
 */
export function tcpProxy(target: () => number) {
  let dropNext = 0;
  let dropped = 0;
  const clients = new Set<Socket<Link>>();
  const listener = Bun.listen<Link>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(client) {
        clients.add(client);
        client.data = { upstream: null, pending: [], dropAnswer: dropNext > 0 };
        if (dropNext > 0) dropNext--;
        Bun.connect<undefined>({
          hostname: "127.0.0.1",
          port: target(),
          socket: {
            open(upstream) {
              client.data.upstream = upstream as unknown as Socket<Link>;
              for (const chunk of client.data.pending) upstream.write(chunk);
              client.data.pending = [];
            },
            data(_upstream, data) {
              if (client.data.dropAnswer) {
                dropped++;
                client.end();
              } else client.write(data);
            },
            close() {
              client.end();
            },
            error() {
              client.end();
            },
          },
        }).catch(() => client.end());
      },
      data(client, data) {
        if (client.data.upstream) client.data.upstream.write(data);
        else client.data.pending.push(new Uint8Array(data));
      },
      close(client) {
        clients.delete(client);
        client.data.upstream?.end();
      },
    },
  });
  return {
    url: `http://127.0.0.1:${listener.port}`,
    /** The next `count` connections are cut as soon as the server answers on them. */
    dropNextAnswers(count = 1) {
      dropNext = count;
    },
    /** How many answers were cut so far. */
    dropped: () => dropped,
    /** Cuts every open connection (as a server going away would). */
    cutAll() {
      for (const client of clients) client.end();
    },
    stop() {
      listener.stop(true);
    },
  };
}
