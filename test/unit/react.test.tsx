import { describe, expect, test } from "bun:test";
import { renderToString } from "react-dom/server";
import { type ActuateClient, createClient } from "../../src/client/index.ts";
import { useQuery } from "../../src/client/react.ts";

let opened = 0;
/** A WebSocket that only counts: server rendering must never open one. */
class CountingSocket {
  static OPEN = 1;
  constructor() {
    opened++;
  }
}

function Notes({ client }: { client: ActuateClient }) {
  const { data, loading } = useQuery(client, { notes: {} });
  return <p>{loading ? "loading" : `${data?.notes?.length} notes`}</p>;
}

describe("actuate/react on the server", () => {
  test("useQuery renders 'loading' and opens nothing during server rendering (the first client render agrees)", () => {
    const client = createClient({
      url: "http://127.0.0.1:1",
      token: "t",
      WebSocket: CountingSocket as unknown as typeof WebSocket,
    });
    expect(renderToString(<Notes client={client} />)).toBe("<p>loading</p>");
    expect(opened).toBe(0);
  });
});
