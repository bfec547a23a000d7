import { describe, expect, test } from "bun:test";
import { renderToString } from "react-dom/server";
import { type ActuateClient, createClient } from "../../src/client/index.ts";
import { useConnectionState, useQuery } from "../../src/client/react.ts";

let opened = 0;
/** A WebSocket that only counts: server rendering must never open one. */
class CountingSocket {
  static OPEN = 1;
  constructor() {
    opened++;
  }
}

function Notes({ client }: { client: ActuateClient }) {
  const { data, error, isLoading, loading } = useQuery(client, { notes: {} });
  const connection = useConnectionState(client);
  const shown = isLoading ? "loading" : error ? error.code : `${data?.notes?.length} notes`;
  return <p>{`${shown} (${connection}, ${loading === isLoading ? "same" : "differs"})`}</p>;
}

describe("actuate/react on the server", () => {
  test("useQuery renders 'loading', useConnectionState 'closed', and nothing opens during server rendering", () => {
    const client = createClient({
      url: "http://127.0.0.1:1",
      token: "t",
      WebSocket: CountingSocket as unknown as typeof WebSocket,
    });
    expect(renderToString(<Notes client={client} />)).toBe("<p>loading (closed, same)</p>");
    expect(opened).toBe(0);
  });
});
