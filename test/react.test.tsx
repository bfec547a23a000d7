import { describe, expect, test } from "bun:test";
import { renderToString } from "react-dom/server";
import { createClient } from "../src/client/index.ts";
import { useQuery } from "../src/client/react.ts";

describe("actuate/react on the server", () => {
  test("useQuery renders 'loading' and opens nothing during server rendering (the first client render agrees)", () => {
    let opened = 0;
    class CountingSocket {
      static OPEN = 1;
      constructor() {
        opened++;
      }
    }
    const client = createClient({
      url: "http://127.0.0.1:1",
      token: "t",
      WebSocket: CountingSocket as unknown as typeof WebSocket,
    });
    function Notes() {
      const { data, loading } = useQuery(client, { notes: {} });
      return <p>{loading ? "loading" : `${data?.notes?.length} notes`}</p>;
    }
    expect(renderToString(<Notes />)).toBe("<p>loading</p>");
    expect(opened).toBe(0);
  });
});
