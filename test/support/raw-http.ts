/** HTTP/1.1 written byte for byte on a socket: requests no client would send as they are (a bad Host, a chunked flood). */

const MiB = 1024 * 1024;

export interface RawAnswer {
  /** NaN when the server closed the connection without answering. */
  status: number;
  /** The status line and headers, lower-cased. */
  headers: string;
  /** The body as sent, its chunked framing removed. */
  body: string;
}

/** Parses what came back on a raw socket: the status line, the headers and the body. */
export function parseAnswer(raw: string): RawAnswer {
  const [head = "", ...rest] = raw.split("\r\n\r\n");
  const headers = head.toLowerCase();
  const sent = rest.join("\r\n\r\n");
  return {
    status: Number(head.split(" ")[1]),
    headers,
    body: /^transfer-encoding: chunked$/m.test(headers) ? unchunked(sent) : sent,
  };
}

function unchunked(text: string): string {
  let body = "";
  let at = 0;
  for (;;) {
    const lineEnd = text.indexOf("\r\n", at);
    const size = Number.parseInt(text.slice(at, lineEnd), 16);
    if (lineEnd < 0 || !(size > 0)) return body;
    body += text.slice(lineEnd + 2, lineEnd + 2 + size);
    at = lineEnd + 2 + size + 2;
  }
}

/** Whether `raw` holds a whole answer: a 101's head, or a head and the body it announces. */
function complete(raw: string): boolean {
  const end = raw.indexOf("\r\n\r\n");
  if (end < 0) return false;
  const { status, headers } = parseAnswer(raw);
  if (status === 101) return true;
  const length = /^content-length: (\d+)$/m.exec(headers)?.[1];
  if (length !== undefined) return Buffer.byteLength(raw.slice(end + 4)) >= Number(length);
  return /^transfer-encoding: chunked$/m.test(headers) && raw.endsWith("0\r\n\r\n");
}

/** One request written as it is (no client normalises it) and its answer, once whole or the connection closed. */
export async function sendRaw(port: number, request: string | Uint8Array): Promise<RawAnswer> {
  let received = "";
  const done = Promise.withResolvers<void>();
  const socket = await Bun.connect({
    hostname: "127.0.0.1",
    port,
    socket: {
      data: (_socket, data) => {
        received += data.toString();
        if (complete(received)) done.resolve();
      },
      close: () => done.resolve(),
      error: () => done.resolve(),
    },
  });
  socket.write(request);
  await done.promise;
  socket.end();
  return parseAnswer(received);
}

/**
 * Sends `head` and then `mib` MiB of chunked body at the pace the server reads it, stopping as soon as
 * the server answers or closes; `sent` is how much of the body the server took before that.
 */
export async function sendChunked(port: number, head: string, mib: number): Promise<RawAnswer & { sent: number }> {
  const frame = Buffer.concat([Buffer.from(`${MiB.toString(16)}\r\n`), Buffer.alloc(MiB, "a"), Buffer.from("\r\n")]);
  let received = "";
  let ended = false;
  let wake: (() => void) | undefined;
  const answered = Promise.withResolvers<void>();
  const socket = await Bun.connect({
    hostname: "127.0.0.1",
    port,
    socket: {
      data(_socket, data) {
        received += data.toString();
        if (received.includes("\r\n\r\n")) answered.resolve();
        wake?.();
      },
      drain: () => wake?.(),
      close() {
        ended = true;
        answered.resolve();
        wake?.();
      },
      error() {
        ended = true;
        answered.resolve();
        wake?.();
      },
    },
  });
  const stopped = () => ended || received.length > 0;
  let sent = 0;
  socket.write(head);
  for (let frames = 0; frames < mib && !stopped(); frames++) {
    let offset = 0;
    while (offset < frame.length && !stopped()) {
      const written = Math.max(socket.write(frame.subarray(offset)), 0);
      offset += written;
      sent += written;
      if (offset < frame.length) await new Promise<void>((resolve) => (wake = resolve));
    }
    // A server that reads as fast as we write never leaves a write partial: without a turn of the event
    // loop between frames its answer would not be seen until the whole body had gone.
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  if (!stopped()) socket.write("0\r\n\r\n");
  await answered.promise;
  // The whole answer: its body follows the headers, sized by Content-Length.
  const length = () => Number(/content-length: (\d+)/i.exec(received)?.[1] ?? 0);
  while (!ended && Buffer.byteLength(received.split("\r\n\r\n").slice(1).join("\r\n\r\n")) < length()) {
    await new Promise<void>((resolve) => (wake = resolve));
  }
  socket.end();
  return { ...parseAnswer(received), sent };
}
