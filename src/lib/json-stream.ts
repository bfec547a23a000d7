const encoder = new TextEncoder();

type Frame =
  | { items: unknown[]; next: number; depth: number }
  | { entries: [string, unknown][]; next: number; depth: number };

/**
 * `value` as JSON, written as the stream is read, in chunks of about `chunkChars` characters with a turn
 * of the event loop between them: a large answer is never one string nor one buffer, and serializing it
 * does not hold every other request (16 MiB at once took 150-250 ms here). Arrays and objects are walked
 * down to `depth` levels; a value at that depth is one `JSON.stringify`. Plain JSON data only (what the
 * data layer answers): objects, arrays, strings, numbers, booleans and null.
 */
export function jsonStream(value: unknown, { chunkChars = 64 * 1024, depth = 7 } = {}): ReadableStream<Uint8Array> {
  const stack: Frame[] = [];
  let text = "";
  const write = (item: unknown, at: number) => {
    if (item === null || typeof item !== "object" || at >= depth) {
      text += JSON.stringify(item) ?? "null";
    } else if (Array.isArray(item)) {
      text += "[";
      stack.push({ items: item, next: 0, depth: at });
    } else {
      text += "{";
      stack.push({ entries: Object.entries(item).filter(([, v]) => v !== undefined), next: 0, depth: at });
    }
  };
  write(value, 0);
  let first = true;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (!first) await new Promise((resolve) => setImmediate(resolve));
      first = false;
      while (stack.length > 0 && text.length < chunkChars) {
        const frame = stack[stack.length - 1] as Frame;
        const items = "items" in frame ? frame.items : frame.entries;
        if (frame.next === items.length) {
          text += "items" in frame ? "]" : "}";
          stack.pop();
          continue;
        }
        if (frame.next > 0) text += ",";
        if ("items" in frame) {
          write(frame.items[frame.next++], frame.depth + 1);
        } else {
          const [key, item] = frame.entries[frame.next++] as [string, unknown];
          text += `${JSON.stringify(key)}:`;
          write(item, frame.depth + 1);
        }
      }
      if (text !== "") controller.enqueue(encoder.encode(text));
      text = "";
      if (stack.length === 0) controller.close();
    },
  });
}
