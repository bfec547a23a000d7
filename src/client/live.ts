import { ActuateError } from "./errors.ts";
import type { Transport } from "./http.ts";

export type ConnectionState = "connecting" | "open" | "closed";

export interface StreamEvent {
  status?: string;
  done?: boolean;
  errorCode?: string | null;
  log?: unknown;
  at?: number;
  /** A log line's number in the execution's log. */
  seq?: number;
}

interface Subscription {
  query: Record<string, unknown>;
  listeners: Set<(result: Record<string, unknown[]>) => void>;
  last?: Record<string, unknown[]>;
}

/** An execution followed, and the last log line it received: a stream resumes after it when the socket reconnects. */
interface Stream {
  listeners: Set<(event: StreamEvent) => void>;
  lastSeq?: number;
}

const MAX_RECONNECT_MS = 10_000;

/** Keys in order, so that two spellings of one query are one subscription (the server matches the same way). */
export const keyOf = (value: unknown): string =>
  JSON.stringify(value, (_key, v) =>
    v && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );

/**
 * One WebSocket to `/session` per client, opened on first use: `init` with the token, live queries
 * as trees (`return-type: "tree"`), execution streams. It reconnects with jittered backoff and
 * subscribes again to everything it held (a stream from the line after the last it received), so a
 * server restart, or the server closing a socket that fell behind (4013), is a pause, not an end.
 */
export class LiveConnection {
  private socket: WebSocket | null = null;
  private state: ConnectionState = "closed";
  private readonly subscriptions = new Map<string, Subscription>();
  private readonly streams = new Map<string, Stream>();
  private readonly stateListeners = new Set<(state: ConnectionState) => void>();
  private attempts = 0;
  private closedByUser = false;
  private reconnectTimer: ReturnType<typeof setTimeout> | null = null;
  private reauthTimer: ReturnType<typeof setInterval> | null = null;

  constructor(
    private readonly url: string,
    private readonly token: () => Promise<string>,
    private readonly WebSocketImpl: typeof WebSocket,
    /** How often an open session sends a fresh token (`init` again), before the one it began with expires. */
    private readonly reauthMs: number,
  ) {}

  subscribe(query: Record<string, unknown>, listener: (result: Record<string, unknown[]>) => void): () => void {
    const key = keyOf(query);
    let sub = this.subscriptions.get(key);
    if (!sub) {
      sub = { query, listeners: new Set() };
      this.subscriptions.set(key, sub);
      if (this.state === "open") this.send({ op: "add-query", q: query, "return-type": "tree" });
    } else if (sub.last) {
      listener(sub.last);
    }
    sub.listeners.add(listener);
    this.open();
    return () => {
      const current = this.subscriptions.get(key);
      if (!current) return;
      current.listeners.delete(listener);
      if (current.listeners.size > 0) return;
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
    this.open();
    return () => {
      listeners.delete(listener);
      if (listeners.size === 0) this.streams.delete(id);
    };
  }

  onConnectionChange(listener: (state: ConnectionState) => void): () => void {
    this.stateListeners.add(listener);
    return () => this.stateListeners.delete(listener);
  }

  close(): void {
    this.closedByUser = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    if (this.reauthTimer) clearInterval(this.reauthTimer);
    this.socket?.close();
    this.socket = null;
    this.setState("closed");
  }

  private open(): void {
    if (this.socket || this.closedByUser) return;
    this.setState("connecting");
    const socket = new this.WebSocketImpl(`${this.url.replace(/^http/, "ws")}/session`);
    this.socket = socket;
    socket.onopen = async () => {
      this.send({ op: "init", "access-token": await this.token() });
    };
    socket.onmessage = (event) => this.receive(JSON.parse(String(event.data)));
    socket.onclose = () => {
      if (this.socket !== socket) return;
      this.socket = null;
      if (this.reauthTimer) clearInterval(this.reauthTimer);
      this.setState("closed");
      if (this.closedByUser || (this.subscriptions.size === 0 && this.streams.size === 0)) return;
      const delay = Math.min(MAX_RECONNECT_MS, 250 * 2 ** this.attempts++) * (0.5 + Math.random() / 2);
      this.reconnectTimer = setTimeout(() => this.open(), delay);
    };
  }

  private receive(message: Record<string, unknown>): void {
    switch (message.op) {
      case "init-ok":
        // A fresh token taken on an open session: nothing else changes.
        if (this.state === "open") return;
        this.attempts = 0;
        this.setState("open");
        this.reauthTimer = setInterval(
          async () => this.send({ op: "init", "access-token": await this.token() }),
          this.reauthMs,
        );
        for (const sub of this.subscriptions.values())
          this.send({ op: "add-query", q: sub.query, "return-type": "tree" });
        for (const [id, { lastSeq }] of this.streams) {
          const resume = lastSeq === undefined ? {} : { "after-seq": lastSeq };
          this.send({ op: "subscribe-stream", "execution-id": id, ...resume });
        }
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
      case "error":
        // An init refused (a revoked token) will not get better by retrying: stop and say so.
        if (message.status === 401) {
          this.closedByUser = true;
          this.socket?.close();
          const error = new ActuateError("unauthorized", String(message.message), 401);
          for (const { listeners } of this.streams.values())
            for (const l of listeners) l({ done: true, errorCode: error.code });
        }
        return;
    }
  }

  private deliver(query: unknown, result: unknown): void {
    const sub = this.subscriptions.get(keyOf(query));
    if (!sub) return;
    sub.last = result as Record<string, unknown[]>;
    for (const listener of sub.listeners) listener(sub.last);
  }

  private send(message: Record<string, unknown>): void {
    if (this.socket?.readyState === this.WebSocketImpl.OPEN) this.socket.send(JSON.stringify(message));
  }

  private setState(state: ConnectionState): void {
    if (this.state === state) return;
    this.state = state;
    for (const listener of this.stateListeners) listener(state);
  }
}

/** A client's session socket: opened on first use, where a WebSocket exists (given, or the global one). */
export function liveSession(transport: Transport, options: { WebSocket?: typeof WebSocket; sessionReauthMs?: number }) {
  let live: LiveConnection | null = null;
  const webSocket = () => options.WebSocket ?? globalThis.WebSocket;
  return {
    available: () => webSocket() !== undefined,
    connection: () => {
      live ??= new LiveConnection(transport.url, transport.token, webSocket(), options.sessionReauthMs ?? 5 * 60_000);
      return live;
    },
    close: () => live?.close(),
  };
}

export type LiveSession = ReturnType<typeof liveSession>;
