import { ActuateError, type ErrorBody, errorOfBody } from "./errors.ts";
import type { Transport } from "./http.ts";

/** `unauthorized`: the server refused the token or revoked it; it stays so until `token` answers another. */
export type ConnectionState = "connecting" | "open" | "closed" | "unauthorized";

export interface StreamEvent {
  status?: string;
  done?: boolean;
  errorCode?: string | null;
  log?: unknown;
  at?: number;
  /** A log line's number in the execution's log. */
  seq?: number;
}

interface Listener {
  onResult: (result: Record<string, unknown[]>) => void;
  onError?: ((error: ActuateError) => void) | undefined;
}

interface Subscription {
  query: Record<string, unknown>;
  listeners: Set<Listener>;
  last?: Record<string, unknown[]>;
}

/** An execution followed, and the last log line it received: a stream resumes after it when the socket reconnects. */
interface Stream {
  listeners: Set<(event: StreamEvent) => void>;
  lastSeq?: number;
}

/** Which list a live list follows (`subscribe-executions`, `subscribe-runs`). */
export type ListKind = "executions" | "runs";

/** A live list held: sent again on every reconnect under the same id. */
interface LiveList {
  kind: ListKind;
  filter: Record<string, string>;
  onChange: (items: unknown[], left: string[]) => void;
  onError?: ((error: ActuateError) => void) | undefined;
}

const MAX_RECONNECT_MS = 10_000;
/** While unauthorized, `token` is asked again after 1 s, doubling up to this. */
const MAX_TOKEN_RETRY_MS = 30_000;
/** The close code of a socket whose token was revoked (src/live/session.ts). */
const REVOKED = 4001;

/** Keys in order, so that two spellings of one query are one subscription (the server matches the same way). */
export const keyOf = (value: unknown): string =>
  JSON.stringify(value, (_key, v) =>
    v && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );

/**
 * What the client uses of a WebSocket class, so that the browser's, Bun's, Node ≥ 22's and the `ws`
 * package's (Node 20) are each accepted as they are typed. The handlers' event is `never` here because
 * each of those types its events its own way; the client reads only `data`, `code` and `reason`.
 */
export interface WebSocketClass {
  new (url: string): SessionSocket;
  readonly OPEN: number;
}

export interface SessionSocket {
  readonly readyState: number;
  onopen: ((event: never) => unknown) | null;
  onmessage: ((event: never) => unknown) | null;
  onclose: ((event: never) => unknown) | null;
  send(data: string): void;
  close(code?: number, reason?: string): void;
}

/**
 * One WebSocket to `/session` per client, opened on first use: `init` with the token, live queries
 * as trees (`return-type: "tree"`), execution streams. It reconnects with jittered backoff and
 * subscribes again to everything it held (a stream from the line after the last it received), so a
 * server restart, or the server closing a socket that fell behind (4013), is a pause, not an end.
 * A refused or revoked token is an end until `token` answers another one.
 */
export class LiveConnection {
  private socket: SessionSocket | null = null;
  private state: ConnectionState = "closed";
  private readonly subscriptions = new Map<string, Subscription>();
  private readonly streams = new Map<string, Stream>();
  private readonly lists = new Map<string, LiveList>();
  private listCount = 0;
  private readonly stateListeners = new Set<(state: ConnectionState) => void>();
  private attempts = 0;
  private closedByUser = false;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private reauthTimer: ReturnType<typeof setInterval> | null = null;
  /** The token the last `init` carried: the one refused, when the server refuses. */
  private sentToken: string | null = null;
  private refusal: ActuateError | null = null;

  constructor(
    private readonly url: string,
    private readonly token: () => Promise<string>,
    private readonly WebSocketImpl: WebSocketClass,
    /** How often an open session sends a fresh token (`init` again), before the one it began with expires. */
    private readonly reauthMs: number,
    /** False for a fixed token: once refused, asking again would answer the same. */
    private readonly tokenMayChange: boolean,
  ) {}

  subscribe(
    query: Record<string, unknown>,
    onResult: (result: Record<string, unknown[]>) => void,
    onError?: (error: ActuateError) => void,
  ): () => void {
    const key = keyOf(query);
    const listener: Listener = { onResult, onError };
    let sub = this.subscriptions.get(key);
    if (!sub) {
      sub = { query, listeners: new Set() };
      this.subscriptions.set(key, sub);
      if (this.state === "open") this.send({ op: "add-query", q: query, "return-type": "tree" });
    } else if (sub.last) {
      onResult(sub.last);
    }
    sub.listeners.add(listener);
    if (this.refusal) onError?.(this.refusal);
    this.open();
    return () => {
      const current = this.subscriptions.get(key);
      if (!current?.listeners.delete(listener) || current.listeners.size > 0) return;
      this.subscriptions.delete(key);
      if (this.state === "open") this.send({ op: "remove-query", q: query });
    };
  }

  stream(executionId: string, listener: (event: StreamEvent) => void): () => void {
    const id = executionId.toLowerCase();
    let stream = this.streams.get(id);
    if (!stream) {
      stream = { listeners: new Set() };
      this.streams.set(id, stream);
      if (this.state === "open") this.send({ op: "subscribe-stream", "execution-id": id });
    }
    const { listeners } = stream;
    listeners.add(listener);
    if (this.refusal) this.endStreams(this.refusal);
    this.open();
    return () => {
      listeners.delete(listener);
      if (listeners.size === 0) this.streams.delete(id);
    };
  }

  /**
   * The list's new and changed rows (as its list endpoint shows them) as they happen, from now on;
   * answers a function that stops it. A filter the server refuses calls `onError` and ends it.
   */
  watchList(
    kind: ListKind,
    filter: Record<string, string>,
    onChange: (items: unknown[], left: string[]) => void,
    onError?: (error: ActuateError) => void,
  ): () => void {
    const id = `${kind}-${++this.listCount}`;
    this.lists.set(id, { kind, filter, onChange, onError });
    if (this.state === "open") this.sendList(id);
    if (this.refusal) onError?.(this.refusal);
    this.open();
    return () => {
      if (this.lists.delete(id) && this.state === "open") this.send({ op: "unsubscribe", "subscription-id": id });
    };
  }

  /** Calls `listener` with the state now, then on every change. */
  onConnectionChange(listener: (state: ConnectionState) => void): () => void {
    this.stateListeners.add(listener);
    listener(this.state);
    return () => this.stateListeners.delete(listener);
  }

  close(): void {
    this.closedByUser = true;
    this.stopTimers();
    this.socket?.close();
    this.socket = null;
    this.setState("closed");
  }

  private open(): void {
    if (this.socket || this.closedByUser || this.refusal) return;
    this.setState("connecting");
    const socket = new this.WebSocketImpl(`${this.url.replace(/^http/, "ws")}/session`);
    this.socket = socket;
    socket.onopen = async () => {
      this.sentToken = await this.token();
      this.send({ op: "init", "access-token": this.sentToken });
    };
    socket.onmessage = (event: { data: unknown }) => this.receive(JSON.parse(String(event.data)));
    socket.onclose = (event: { code: number; reason: string }) => {
      if (this.socket !== socket) return;
      this.socket = null;
      this.stopTimers();
      if (event.code === REVOKED) return this.unauthorized(event.reason || "the access token was revoked");
      this.setState("closed");
      if (this.closedByUser || (this.subscriptions.size === 0 && this.streams.size === 0 && this.lists.size === 0))
        return;
      const delay = Math.min(MAX_RECONNECT_MS, 250 * 2 ** this.attempts++) * (0.5 + Math.random() / 2);
      this.timer = setTimeout(() => this.open(), delay);
    };
  }

  /**
   * The token was refused or revoked: retrying with it cannot work. Every subscription hears it (and
   * stays, to be asked again), every stream ends; `token` is asked again until it answers another.
   */
  private unauthorized(message: string): void {
    const socket = this.socket;
    this.socket = null;
    socket?.close();
    this.stopTimers();
    const refusal = new ActuateError("unauthorized", message, 401);
    this.refusal = refusal;
    this.setState("unauthorized");
    for (const { listeners } of this.subscriptions.values()) for (const l of listeners) l.onError?.(refusal);
    for (const list of this.lists.values()) list.onError?.(refusal);
    this.endStreams(refusal);
    if (!this.tokenMayChange) return;
    const ask = (delay: number) => {
      this.timer = setTimeout(async () => {
        const token = await this.token().catch(() => this.sentToken);
        if (this.closedByUser || this.refusal !== refusal) return;
        if (token === this.sentToken) return ask(Math.min(delay * 2, MAX_TOKEN_RETRY_MS));
        this.refusal = null;
        this.attempts = 0;
        this.open();
      }, delay);
    };
    ask(1_000);
  }

  private endStreams(error: ActuateError): void {
    for (const { listeners } of this.streams.values())
      for (const l of listeners) l({ done: true, errorCode: error.code });
    this.streams.clear();
  }

  private receive(message: Record<string, unknown>): void {
    switch (message.op) {
      case "init-ok":
        // A fresh token taken on an open session: nothing else changes.
        if (this.state === "open") return;
        this.attempts = 0;
        this.setState("open");
        this.reauthTimer = setInterval(async () => {
          this.sentToken = await this.token();
          this.send({ op: "init", "access-token": this.sentToken });
        }, this.reauthMs);
        for (const sub of this.subscriptions.values())
          this.send({ op: "add-query", q: sub.query, "return-type": "tree" });
        for (const [id, { lastSeq }] of this.streams) {
          const resume = lastSeq === undefined ? {} : { "after-seq": lastSeq };
          this.send({ op: "subscribe-stream", "execution-id": id, ...resume });
        }
        for (const id of this.lists.keys()) this.sendList(id);
        return;
      case "add-query-ok":
        this.deliver(message.q, message.result);
        return;
      case "refresh-ok":
        for (const computation of message.computations as Record<string, unknown>[]) {
          this.deliver(computation["instaql-query"], computation["instaql-result"]);
        }
        return;
      case "stream-append": {
        const { op: _, "execution-id": id, "client-event-id": __, ...event } = message;
        const stream = this.streams.get(String(id));
        if (!stream) return;
        if (typeof event.seq === "number") stream.lastSeq = event.seq;
        for (const listener of stream.listeners) listener(event as StreamEvent);
        return;
      }
      case "executions-changed":
      case "runs-changed":
        this.lists
          .get(String(message["subscription-id"]))
          ?.onChange(message.items as unknown[], (message.left as string[] | undefined) ?? []);
        return;
      case "error":
        this.refused(message);
        return;
    }
  }

  /**
   * An `init` refused (401) will not get better by retrying: unauthorized. A query refused (an unknown
   * entity, a result too large, …) neither: its listeners hear why and it is dropped; subscribing again asks again.
   */
  private refused(message: Record<string, unknown>): void {
    const status = Number(message.status);
    if (status === 401) {
      this.unauthorized(String(message.message));
      return;
    }
    const original = message["original-event"] as { op?: string; q?: unknown } | undefined;
    const listId = (original as { "subscription-id"?: unknown } | undefined)?.["subscription-id"];
    const list =
      typeof listId === "string" && original?.op?.startsWith("subscribe-") ? this.lists.get(listId) : undefined;
    if (list) {
      this.lists.delete(listId as string);
      list.onError?.(errorOfBody(message as ErrorBody, status));
      return;
    }
    if (original?.op !== "add-query") return;
    const key = keyOf(original.q);
    const sub = this.subscriptions.get(key);
    if (!sub) return;
    this.subscriptions.delete(key);
    // A query that had worked is still held by the server: it is let go there too.
    if (sub.last) this.send({ op: "remove-query", q: sub.query });
    const error = errorOfBody(message as ErrorBody, status);
    for (const listener of sub.listeners) listener.onError?.(error);
  }

  private deliver(query: unknown, result: unknown): void {
    const sub = this.subscriptions.get(keyOf(query));
    if (!sub) return;
    sub.last = result as Record<string, unknown[]>;
    for (const listener of sub.listeners) listener.onResult(sub.last);
  }

  private sendList(id: string): void {
    const list = this.lists.get(id);
    if (list) this.send({ op: `subscribe-${list.kind}`, "subscription-id": id, filter: list.filter });
  }

  private send(message: Record<string, unknown>): void {
    if (this.socket?.readyState === this.WebSocketImpl.OPEN) this.socket.send(JSON.stringify(message));
  }

  private stopTimers(): void {
    if (this.timer) clearTimeout(this.timer);
    if (this.reauthTimer) clearInterval(this.reauthTimer);
  }

  private setState(state: ConnectionState): void {
    if (this.state === state) return;
    this.state = state;
    for (const listener of this.stateListeners) listener(state);
  }
}

/** A client's session socket: opened on first use, where a WebSocket exists (given, or the global one). */
export function liveSession(
  transport: Transport,
  options: { token: unknown; WebSocket?: WebSocketClass | undefined; sessionReauthMs?: number | undefined },
) {
  let live: LiveConnection | null = null;
  const webSocket = () => options.WebSocket ?? globalThis.WebSocket;
  return {
    available: () => webSocket() !== undefined,
    connection: () => {
      live ??= new LiveConnection(
        transport.url,
        transport.token,
        webSocket(),
        options.sessionReauthMs ?? 5 * 60_000,
        typeof options.token === "function",
      );
      return live;
    },
    close: () => live?.close(),
  };
}

export type LiveSession = ReturnType<typeof liveSession>;
