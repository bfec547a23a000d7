import { readFileSync } from "node:fs";

export const MiB = 1024 * 1024;

/** `mib` MiB of `fill` bytes, produced one MiB at a time as the reader pulls: the test never holds the file. */
export function filledStream(mib: number, fill = 7): ReadableStream<Uint8Array> {
  const chunk = new Uint8Array(MiB).fill(fill);
  let sent = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent === mib) return controller.close();
      sent++;
      controller.enqueue(chunk);
    },
  });
}

const rssOf = (pid: number) =>
  Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) * 1024;

/** Samples a process's resident memory until `stop()`, which answers the peak's growth over the start. */
export function watchRss(pid: number): { stop(): number } {
  const before = rssOf(pid);
  let peak = before;
  const sampler = setInterval(() => {
    peak = Math.max(peak, rssOf(pid));
  }, 20);
  return {
    stop() {
      clearInterval(sampler);
      return Math.max(peak, rssOf(pid)) - before;
    },
  };
}

export interface PartSpec {
  name: string;
  filename?: string;
  contentType?: string;
  body: string | Uint8Array | ReadableStream<Uint8Array>;
}

/** A multipart/form-data body streamed part by part (FormData would hold every file in memory). */
export function multipartStream(parts: PartSpec[]): { body: ReadableStream<Uint8Array>; contentType: string } {
  const boundary = `----actuate-test-${crypto.randomUUID()}`;
  const encoder = new TextEncoder();
  async function* pieces(): AsyncGenerator<Uint8Array> {
    for (const part of parts) {
      const disposition = `form-data; name="${part.name}"${part.filename === undefined ? "" : `; filename="${part.filename}"`}`;
      const type = part.contentType ? `\r\nContent-Type: ${part.contentType}` : "";
      yield encoder.encode(`--${boundary}\r\nContent-Disposition: ${disposition}${type}\r\n\r\n`);
      if (typeof part.body === "string") yield encoder.encode(part.body);
      else if (part.body instanceof Uint8Array) yield part.body;
      else yield* part.body;
      yield encoder.encode("\r\n");
    }
    yield encoder.encode(`--${boundary}--\r\n`);
  }
  const iterator = pieces();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { value, done } = await iterator.next();
      if (done) controller.close();
      else controller.enqueue(value);
    },
  });
  return { body, contentType: `multipart/form-data; boundary=${boundary}` };
}
