import type { LiveClient } from "./live-client.ts";
import { type RawAnswer, sendChunked, sendRaw } from "./raw-http.ts";

/**
 * The requests of the route fuzz (test/http/fuzz-routes.test.ts), made from a few well-formed requests per
 * route: each string they hold replaced in turn by a long word, bodies nested past every depth limit or
 * sent chunked past every size limit, malformed Host headers, long headers, paths and query strings.
 */

export const MiB = 1024 * 1024;
/** A word of 1 MiB, no space in it: what a careless or hostile client pastes into any string. */
const WORD = "w".repeat(MiB);
/** The longest word that fits in a request's head, which Bun reads up to 16 KiB (request line and headers). */
const HEAD_WORD = "h".repeat(12 * 1024);
/** Far past the 64 levels any JSON may nest (docs/API.md, Limits). */
const DEEP = 100_000;
/**
 * Stands for a UUID made anew for each request sent: an invoke's requestId, which a replay with another
 * input would answer 409 before anything runs.
 */
export const FRESH = "$fresh-uuid";
const freshened = (text: string) => text.replaceAll(FRESH, () => crypto.randomUUID());

/** What came back: NaN as status when the connection closed without an answer. */
export interface Answer {
  status: number;
  contentType: string;
  body: string;
}

export interface FuzzCase {
  /** The request, for the failure's message. */
  what: string;
  send(): Promise<Answer>;
  /**
   * Bun refuses it itself with this status and an empty body, before any code of ours (docs/API.md,
   * "Bun's own answers"): 431 for a head over 16 KiB, 400 for an HTTP/1.1 request without Host.
   */
  bunAnswers?: number;
  /** A `/session` message: its answer is a socket message (`error` with a status), not an HTTP answer. */
  socket?: boolean;
}

export type Body =
  | { kind: "json"; value: unknown }
  | { kind: "form"; fields: Record<string, string> }
  | { kind: "multipart"; parts: Part[] }
  | { kind: "bytes"; text: string; contentType: string };

export interface Part {
  name: string;
  filename?: string;
  contentType?: string;
  content: string;
}

/** A well-formed request to one route, which the cases vary. */
export interface Template {
  method: string;
  /** The route as the app lists it (`/executions/:id`), and the path sent (`/executions/<uuid>?limit=5`). */
  route: string;
  path: string;
  headers?: Record<string, string>;
  body?: Body;
  /** The route's body limit: words in the body are as long as it takes, 1 MiB at most. */
  bodyLimit?: number;
}

export interface Server {
  url: string;
  port: number;
}

const BOUNDARY = "fuzz-boundary-7a1c";

/** A body's bytes and content type as sent, each FRESH a new UUID. */
function encode(body: Body): { text: string; contentType: string } {
  const { text, contentType } = asWritten(body);
  return { text: freshened(text), contentType };
}

function asWritten(body: Body): { text: string; contentType: string } {
  switch (body.kind) {
    case "json":
      return { text: JSON.stringify(body.value), contentType: "application/json" };
    case "form":
      return { text: new URLSearchParams(body.fields).toString(), contentType: "application/x-www-form-urlencoded" };
    case "bytes":
      return { text: body.text, contentType: body.contentType };
    case "multipart": {
      const parts = body.parts.map(
        (p) =>
          `--${BOUNDARY}\r\ncontent-disposition: form-data; name="${p.name}"` +
          (p.filename === undefined ? "" : `; filename="${p.filename}"`) +
          (p.contentType === undefined ? "" : `\r\ncontent-type: ${p.contentType}`) +
          `\r\n\r\n${p.content}\r\n`,
      );
      return { text: `${parts.join("")}--${BOUNDARY}--\r\n`, contentType: `multipart/form-data; boundary=${BOUNDARY}` };
    }
  }
}

/** Copies of `value` with one string in it (a value or a key) replaced by `word`: one copy per string. */
function withWordAt(value: unknown, word: string): unknown[] {
  if (typeof value === "string") return [word];
  if (Array.isArray(value)) return value.flatMap((item, i) => withWordAt(item, word).map((v) => value.with(i, v)));
  if (typeof value !== "object" || value === null) return [];
  const entries = Object.entries(value);
  return entries.flatMap(([key, item], i) => [
    Object.fromEntries(entries.map(([k, v], j) => [j === i ? word : k, v])),
    ...withWordAt(item, word).map((v) => ({ ...value, [key]: v })),
  ]);
}

/** JSON text nested `levels` deep, as arrays or as objects. */
const nestedArrays = (levels: number) => `${"[".repeat(levels)}${"]".repeat(levels)}`;
const nestedObjects = (levels: number) => `${'{"a":'.repeat(levels)}null${"}".repeat(levels)}`;

/** Bodies of the template with each of its strings a word as long as the route takes (1 MiB at most). */
function bodyWords(body: Body, limit: number): { body: Body; what: string }[] {
  const word = WORD.slice(0, Math.min(MiB, limit - 4096));
  const size = `${Math.round(word.length / 1024)} KiB word`;
  switch (body.kind) {
    case "json":
      return withWordAt(body.value, word).map((value, i) => ({ body: { kind: "json", value }, what: `${size} #${i}` }));
    case "form":
      return Object.keys(body.fields).flatMap((name) => [
        { body: { kind: "form", fields: { ...body.fields, [name]: word } }, what: `${size} in ${name}` },
        { body: { kind: "form", fields: { ...body.fields, [word]: "x" } }, what: `${size} as a field name` },
      ]);
    case "bytes":
      return [{ body: { ...body, text: word }, what: size }];
    case "multipart":
      return body.parts.flatMap((part, i) => {
        const at = (changed: Partial<Part>, where: string) => ({
          body: { kind: "multipart" as const, parts: body.parts.with(i, { ...part, ...changed }) },
          what: `${size} in part ${part.name}'s ${where}`,
        });
        const inContent = part.contentType?.includes("json")
          ? withWordAt(JSON.parse(part.content), word).map((v, j) => at({ content: JSON.stringify(v) }, `JSON #${j}`))
          : [at({ content: word }, "content")];
        return [
          at({ name: word }, "name"),
          at({ filename: word }, "filename"),
          at({ contentType: word }, "content type"),
          ...inContent,
        ];
      });
  }
}

/** `value` with its last leaf (the last value of the last value… of its containers) replaced by `leaf`. */
function withLastLeaf(value: unknown, leaf: unknown): unknown {
  if (Array.isArray(value) && value.length > 0) return value.with(-1, withLastLeaf(value.at(-1), leaf));
  if (typeof value !== "object" || value === null || Array.isArray(value)) return leaf;
  const last = Object.keys(value).at(-1);
  return last === undefined ? leaf : { ...value, [last]: withLastLeaf((value as Record<string, unknown>)[last], leaf) };
}

/**
 * JSON texts nested past the depth limit: the whole text, and `value` with its last leaf nested (an
 * invoke's input, a tool call's arguments, a live query).
 */
function deepTexts(value: unknown): string[] {
  const deep = [nestedArrays(DEEP), nestedObjects(DEEP)];
  if (typeof value !== "object" || value === null) return deep;
  const here = "\u0001nested here";
  const marked = JSON.stringify(withLastLeaf(value, here));
  return [...deep, ...deep.map((nested) => marked.replace(JSON.stringify(here), nested))];
}

/** Bodies nested past the depth limit: the whole body, its last leaf, each multipart part. */
function deepBodies(body: Body): Body[] {
  if (body.kind === "json") return deepTexts(body.value).map(textBody);
  if (body.kind === "multipart") {
    return body.parts.map((part, i) => ({
      kind: "multipart",
      parts: body.parts.with(i, { ...part, content: nestedArrays(DEEP) }),
    }));
  }
  return [];
}

const textBody = (text: string): Body => ({ kind: "bytes", text, contentType: "application/json" });

/** Path segments no client should send, none a control character (Bun answers those 505 itself). */
const GARBAGE = ["%", "%zz", "%E0%A4%A", "%00", "%C0%AF", "..%2F..%2Fetc%2Fpasswd", "%F0%9F%98%80", "a%2Fb", "%25"];

/** Long headers, each sent alone to every route. */
const HEADER_WORDS: [string, string][] = [
  ["authorization", `Bearer ${HEAD_WORD}`],
  ["authorization", HEAD_WORD],
  ["content-type", HEAD_WORD],
  ["content-type", `multipart/form-data; boundary=${HEAD_WORD}`],
  ["accept", HEAD_WORD],
  ["origin", `https://${HEAD_WORD}.example`],
  ["x-request-id", HEAD_WORD],
  ["traceparent", `00-${HEAD_WORD}-01`],
  ["cookie", `_session=${HEAD_WORD}`],
  ["path", HEAD_WORD],
  ["mcp-protocol-version", HEAD_WORD],
  ["mcp-session-id", HEAD_WORD],
  ["mcp-method", HEAD_WORD],
  ["mcp-name", HEAD_WORD],
  ["last-event-id", HEAD_WORD],
  ["access-control-request-method", HEAD_WORD],
  ["x-forwarded-for", HEAD_WORD],
];

/** Host headers that make no URL, or an odd one; `null`: none at all. */
const HOSTS: (string | null)[] = ["ex ample", "", "[::1", "a:b:c", "x", "127.0.0.1:99999", HEAD_WORD, null];

/** Over every body limit of the server under test (it runs with MAX_FILE_BYTES and MAX_MULTIPART_BYTES below it). */
const CHUNKED_MIB = 12;

const rawAnswer = (raw: RawAnswer): Answer => ({
  status: raw.status,
  contentType: /^content-type: (.*)$/m.exec(raw.headers)?.[1] ?? "",
  body: raw.body,
});

/** The template's request with a credential, `changes` applied. */
function fetchCase(
  server: Server,
  t: Template,
  credential: string,
  changes: { path?: string; headers?: Record<string, string>; body?: Body; method?: string } = {},
): () => Promise<Answer> {
  return async () => {
    const body = changes.body ?? t.body;
    const encoded = body && encode(body);
    const headers = new Headers({
      authorization: `Bearer ${credential}`,
      ...(encoded ? { "content-type": encoded.contentType } : {}),
      ...t.headers,
      ...changes.headers,
    });
    try {
      const response = await fetch(`${server.url}${changes.path ?? t.path}`, {
        method: changes.method ?? t.method,
        headers,
        body: encoded?.text,
        redirect: "manual",
      });
      return {
        status: response.status,
        contentType: response.headers.get("content-type") ?? "",
        body: await response.text(),
      };
    } catch (error) {
      return { status: Number.NaN, contentType: "", body: String(error) };
    }
  };
}

/** The template's path with its `:param` or `*` segment number `index` (of the route) replaced. */
function withSegment(t: Template, index: number, segment: string): string {
  const [path = "", query] = t.path.split("?");
  const parts = path.split("/");
  parts[index] = segment;
  return query === undefined ? parts.join("/") : `${parts.join("/")}?${query}`;
}

const withQuery = (path: string, query: string) => `${path}${path.includes("?") ? "&" : "?"}${query}`;

/**
 * Every case for one route's templates: the first template is varied in its path, query string,
 * headers, Host, method and chunked body; every template with a body in each of its strings and depth.
 */
export function casesFor(server: Server, templates: Template[], credentials: string[], queryParams: string[]) {
  const cases: FuzzCase[] = [];
  const credential = () => credentials[cases.length % credentials.length] as string;
  const add = (what: string, send: (credential: string) => () => Promise<Answer>, bunAnswers?: number) =>
    cases.push({ what, send: send(credential()), bunAnswers });
  const [first] = templates;
  if (!first) return cases;
  const at = `${first.method} ${first.route}`;

  for (const t of templates) add(`${t.method} ${t.path}`, (c) => fetchCase(server, t, c));

  first.route.split("/").forEach((segment, index) => {
    if (!segment.startsWith(":") && segment !== "*") return;
    add(`${at}: ${segment} a ${HEAD_WORD.length}-character word`, (c) =>
      fetchCase(server, first, c, { path: withSegment(first, index, HEAD_WORD) }),
    );
    add(
      `${at}: ${segment} a 1 MiB word`,
      (c) => fetchCase(server, first, c, { path: withSegment(first, index, WORD) }),
      431,
    );
    for (const garbage of GARBAGE) {
      add(`${at}: ${segment} ${garbage}`, (c) =>
        fetchCase(server, first, c, { path: withSegment(first, index, garbage) }),
      );
    }
  });

  add(`${at}?<long name>=x`, (c) => fetchCase(server, first, c, { path: withQuery(first.path, `${HEAD_WORD}=x`) }));
  for (const name of queryParams) {
    add(`${at}?${name}=<long word>`, (c) =>
      fetchCase(server, first, c, { path: withQuery(first.path, `${name}=${HEAD_WORD}`) }),
    );
    for (const garbage of GARBAGE.slice(0, 3)) {
      add(`${at}?${name}=${garbage}`, (c) =>
        fetchCase(server, first, c, { path: withQuery(first.path, `${name}=${garbage}`) }),
      );
    }
  }
  add(`${at}?<1 MiB>`, (c) => fetchCase(server, first, c, { path: withQuery(first.path, `q=${WORD}`) }), 431);

  for (const [name, value] of HEADER_WORDS) {
    add(`${at} with a long ${name}`, (c) => fetchCase(server, first, c, { headers: { [name]: value } }));
  }
  add(`${at} with a 1 MiB header`, (c) => fetchCase(server, first, c, { headers: { "x-note": WORD } }), 431);
  add(`OPTIONS ${first.route} preflight`, (c) =>
    fetchCase(server, first, c, {
      method: "OPTIONS",
      headers: { origin: "https://elsewhere.example", "access-control-request-method": first.method },
    }),
  );
  add(`PATCH ${first.route}`, (c) => fetchCase(server, first, c, { method: "PATCH" }));

  for (const host of HOSTS) {
    const shown = host === null ? "no Host" : `Host ${JSON.stringify(host.slice(0, 20))}`;
    const send = (c: string) => async () => {
      const encoded = first.body && encode(first.body);
      const text = encoded?.text ?? "{}";
      return rawAnswer(
        await sendRaw(
          server.port,
          `${first.method} ${first.path} HTTP/1.1\r\n${host === null ? "" : `host: ${host}\r\n`}` +
            `authorization: Bearer ${c}\r\ncontent-type: ${encoded?.contentType ?? "application/json"}\r\n` +
            `content-length: ${Buffer.byteLength(text)}\r\nconnection: close\r\n\r\n${text}`,
        ),
      );
    };
    add(`${at} with ${shown}`, send, host === null ? 400 : undefined);
  }
  add(
    `${at} HTTP/1.0 without Host`,
    (c) => async () =>
      rawAnswer(
        await sendRaw(server.port, `${first.method} ${first.path} HTTP/1.0\r\nauthorization: Bearer ${c}\r\n\r\n`),
      ),
  );

  add(
    `${at} with ${CHUNKED_MIB} MiB chunked`,
    (c) => async () =>
      rawAnswer(
        await sendChunked(
          server.port,
          `${first.method} ${first.path} HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${c}\r\n` +
            `content-type: ${first.body ? encode(first.body).contentType : "application/json"}\r\n` +
            "accept: application/json, text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n",
          CHUNKED_MIB,
        ),
      ),
  );

  for (const t of templates) {
    if (!t.body) continue;
    for (const variant of bodyWords(t.body, t.bodyLimit ?? 8 * MiB)) {
      add(`${t.method} ${t.path}: ${variant.what}`, (c) => fetchCase(server, t, c, { body: variant.body }));
    }
    deepBodies(t.body).forEach((body, i) => {
      add(`${t.method} ${t.path}: nested ${DEEP} deep #${i}`, (c) => fetchCase(server, t, c, { body }));
    });
    add(`${t.method} ${t.path}: a 1 MiB word as the body`, (c) =>
      fetchCase(server, t, c, { body: { kind: "bytes", text: WORD, contentType: encode(t.body as Body).contentType } }),
    );
  }
  return cases;
}

/**
 * `/session` messages on a signed-in socket, one at a time: each of `messages` with each of its strings
 * a 1 MiB word, nested past the depth limit, and messages that are no JSON object. The answer is the
 * next message the socket gets (a live query's refresh aside); none, or the socket closed, is a problem.
 */
export function socketCases(socket: LiveClient, messages: Record<string, unknown>[]): FuzzCase[] {
  let turn: Promise<unknown> = Promise.resolve();
  const ask = (text: string) => async (): Promise<Answer> => {
    const asked = turn.then(async () => {
      if (socket.closed)
        return { status: Number.NaN, contentType: "", body: `closed: ${JSON.stringify(socket.closed)}` };
      socket.send(text);
      try {
        const message = await socket.next((m) => m.op !== "refresh-ok", 30_000);
        const status = message.op === "error" ? Number(message.status) : 200;
        return { status, contentType: "application/json", body: JSON.stringify(message) };
      } catch (error) {
        return { status: Number.NaN, contentType: "", body: String(error) };
      }
    });
    turn = asked;
    return asked;
  };
  const texts = [
    ...messages.flatMap((m) => [...withWordAt(m, WORD).map((v) => JSON.stringify(v)), ...deepTexts(m)]),
    WORD,
    JSON.stringify(WORD),
    nestedArrays(DEEP),
  ];
  return texts.map((text) => ({
    what: `/session message ${text.slice(0, 120)}… (${text.length} characters)`,
    send: ask(text),
    socket: true,
  }));
}

/**
 * WebSocket upgrades of `/session`, which no fetch can make: signed in by the header, with a long or
 * unknown credential, without the handshake's key.
 */
export function upgradeCases(server: Server, credential: string): FuzzCase[] {
  const handshake = "upgrade: websocket\r\nconnection: Upgrade\r\nsec-websocket-version: 13\r\n";
  const key = "sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\n";
  const variants: [string, string][] = [
    ["signed in by its header", `authorization: Bearer ${credential}\r\n${key}`],
    ["a long credential", `authorization: Bearer ${HEAD_WORD}\r\n${key}`],
    ["an unknown credential", `authorization: Bearer nobody\r\n${key}`],
    ["no handshake key", `authorization: Bearer ${credential}\r\n`],
    ["a long handshake key", `sec-websocket-key: ${HEAD_WORD}\r\n`],
  ];
  return variants.map(([what, headers]) => ({
    what: `GET /session upgrade, ${what}`,
    send: async () =>
      rawAnswer(await sendRaw(server.port, `GET /session HTTP/1.1\r\nhost: 127.0.0.1\r\n${handshake}${headers}\r\n`)),
  }));
}

/** A problem with an answer, or null when it is one the server may give. */
export function problemWith(c: FuzzCase, answer: Answer, outage: boolean): string | null {
  const said = `${c.what}: ${answer.status} ${answer.contentType} ${answer.body.slice(0, 300)}`;
  if (c.bunAnswers !== undefined) {
    // Bun closes after a 431 while the client may still be writing the head: the close may come first.
    const closed = c.bunAnswers === 431 && Number.isNaN(answer.status);
    const answered = answer.status === c.bunAnswers && answer.body === "";
    return closed || answered ? null : `expected Bun's own ${c.bunAnswers}: ${said}`;
  }
  if (Number.isNaN(answer.status)) return `no answer: ${said}`;
  let parsed: Record<string, unknown> | null = null;
  try {
    parsed = JSON.parse(answer.body);
  } catch {}
  // During an outage: a request that needs the database, and /readyz, whose 503 says so.
  const unavailable =
    answer.status === 503 && (parsed?.error === "database_unavailable" || parsed?.error === "not_ready");
  if (answer.status >= 500 && !(outage && unavailable)) return `a ${answer.status}: ${said}`;
  if (answer.status < 400) return null;
  if (c.socket) return typeof parsed?.error === "string" ? null : `a socket error without its code: ${said}`;
  // The sign-in form again, for a person (docs/API.md, "The sign-in page and errors of /oauth/*").
  if (
    answer.contentType.startsWith("text/html") &&
    [401, 403, 429].includes(answer.status) &&
    c.what.includes("/oauth/interaction/")
  )
    return null;
  if (!answer.contentType.includes("application/json")) return `not JSON: ${said}`;
  if (parsed?.ok !== false || parsed.error === undefined) return `not ok:false with an error: ${said}`;
  return null;
}
