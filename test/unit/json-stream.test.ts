import { describe, expect, test } from "bun:test";
import { jsonStream } from "../../src/lib/json-stream.ts";

const chunksOf = async (stream: ReadableStream<Uint8Array>) => {
  const decoder = new TextDecoder();
  const chunks: string[] = [];
  for await (const chunk of stream) chunks.push(decoder.decode(chunk));
  return chunks;
};

describe("jsonStream", () => {
  test("writes what JSON.stringify writes, at any chunk size and depth", async () => {
    const values = [
      null,
      1.5,
      "é😀\u0000\n",
      [],
      {},
      [1, [2, [3, [4, [5, [6, [7, [8, [9]]]]]]]]],
      { a: undefined, b: [null, true, false], c: { d: { e: { f: { g: { h: { i: "deep" } } } } } } },
      { result: [{ data: { "datalog-result": { "join-rows": [[["id", "attr", { x: 1 }, 1700000000000]]] } } }] },
    ];
    for (const value of values) {
      for (const options of [{}, { chunkChars: 1 }, { chunkChars: 5, depth: 2 }, { depth: 0 }]) {
        expect((await chunksOf(jsonStream(value, options))).join("")).toBe(JSON.stringify(value));
      }
    }
  });

  test("a large value comes in chunks of about chunkChars, with a turn of the event loop between them", async () => {
    const rows = Array.from({ length: 10_000 }, (_, i) => [`entity-${i}`, "attr", "v".repeat(50), i]);
    const reader = jsonStream({ rows }, { chunkChars: 4096 }).getReader();
    const decoder = new TextDecoder();
    const first = await reader.read();
    let turned = false;
    setImmediate(() => {
      turned = true;
    });
    const second = await reader.read();
    expect(turned).toBe(true);
    let text = decoder.decode(first.value) + decoder.decode(second.value);
    let largest = Math.max(first.value?.length ?? 0, second.value?.length ?? 0);
    for (let next = await reader.read(); !next.done; next = await reader.read()) {
      text += decoder.decode(next.value);
      largest = Math.max(largest, next.value.length);
    }
    expect(text).toBe(JSON.stringify({ rows }));
    expect(largest).toBeLessThan(4096 + 200);
  });
});
