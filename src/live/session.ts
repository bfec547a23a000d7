import type { Authenticator } from "../auth/authenticator.ts";
import type { LiveLimits } from "../config.ts";
import type { DataService } from "../data/service.ts";
import type { Engine } from "../engine/engine.ts";
import type { ExecutionEvent } from "../engine/execution-feed.ts";
import { type Execution, isTerminal } from "../engine/executions.ts";
import type { ListChanges } from "../engine/list-feed.ts";
import { canonicalJson } from "../lib/canonical-json.ts";
import { loggable, publicErrorOf } from "../lib/database-errors.ts";
import { type ErrorCode, PublicError } from "../lib/errors.ts";
import { nestsDeeperThan, tooDeepMessage } from "../lib/json-depth.ts";
import { LoopFailures } from "../lib/loop-failures.ts";
import { isObject } from "../lib/values.ts";
import type { Log } from "../observe/log.ts";
import type { Telemetry } from "../observe/telemetry.ts";
import type { LoadedRelease } from "../release/load.ts";
import type { Principal } from "../sdk/index.ts";
import { type ListFilter, type ListKind, listFilterOf, listItems } from "./lists.ts";

/** The socket as the hub sees it; http/session.ts adapts Elysia's (Bun's). */
export interface LiveSocket {
  /** False when Bun dropped the message: it does once 16 MiB the client has not read are waiting. */
  send(message: string): boolean;
  /** Bytes sent that the client has not read yet (Bun holds them until the socket drains). */
  unsentBytes(): number;
  close(code: number, reason: string): void;
}

/** A socket that falls so far behind that a message would be dropped is closed with this code; clients reconnect. */
const FELL_BEHIND = 4013;

/** A bearer credential and the caller it names. */
export interface Login {
  token: string;
  principal: Principal;
}

export interface HubDeps {
  auth: Authenticator;
  data: DataService;
  engine: Engine;
  log: Log;
  limits: LiveLimits;
  telemetry: Telemetry;
  /** The server's public URL: live lists' rows carry `statusUrl` as the list endpoints do. */
  publicUrl: () => string;
}

/** What one caller holds on this server, across its sockets. */
interface CallerLoad {
  sockets: number;
  subscriptions: number;
}

const callerKey = (principal: Principal) => `${principal.kind}\u0000${principal.id}`;
const sameCaller = (a: Principal, b: Principal) => a.kind === b.kind && a.id === b.id;

type ResultShape = "join-rows" | "tree";

interface Subscription {
  q: unknown;
  returnType: ResultShape;
  reads: Set<string>;
  /** The JSON last sent, so an unchanged result is not sent again. */
  last: string;
}

/** One query run of a refresh pass, and the subscriptions (same caller, same query) that share its result. */
interface RefreshRun {
  session: Session;
  sub: Subscription;
  subscribers: { session: Session; key: string; sub: Subscription }[];
}

interface Session {
  id: string;
  socket: LiveSocket;
  /** The upgrade's `Authorization` header, when it named a caller: `init` may then leave out its token. */
  headerLogin: Login | null;
  token: string | null;
  principal: Principal | null;
  subscriptions: Map<string, Subscription>;
  /** Subscriptions whose latest result is to be sent, held while the socket has unsent bytes (`pump`). */
  due: Map<string, DueResult>;
  streams: Map<string, () => void>;
  /** Live lists (`subscribe-executions`, `subscribe-runs`) by the client's `subscription-id`. */
  lists: Map<string, { kind: ListKind; filter: ListFilter }>;
  /** Streams whose next line waits for the socket to have sent everything. */
  drainWaiters: (() => void)[];
  initTimer: Timer;
}

type Message = Record<string, unknown> & { op?: unknown };

/** A subscription's result to send: the answer to its `add-query` (repeating the client's event id), or a refresh. */
type DueResult = { answer: { eventId: unknown } } | { answer: null };
const REFRESH: DueResult = { answer: null };

/** A status as `stream-append` shows it: `done` once ended, with the error code then. */
const streamStatus = (execution: Execution) => {
  const done = isTerminal(execution.status);
  return { status: execution.status, done, ...(done ? { errorCode: execution.errorCode } : {}) };
};

/**
 * Live queries over one WebSocket per client, in InstantDB's session protocol: `init` (with the
 * token, since a browser cannot set headers, unless the upgrade's `Authorization` header named the
 * caller), `add-query` / `remove-query`, and `subscribe-stream` to
 * follow an execution. After every committed write, each subscription that reads a touched entity is
 * re-run as its subscriber; changed results go out in one `refresh-ok` per socket.
 */
export class SessionHub {
  private readonly sessions = new Set<Session>();
  private readonly callers = new Map<string, CallerLoad>();
  private refreshing = false;
  private stopped = false;
  private pendingEntities = new Set<string>();
  private readonly stopFeed: () => void;
  private readonly revocationTimer: Timer;
  private readonly tokenChecks: LoopFailures;
  /** Hearing the engine's list changes: only while some socket holds a live list. */
  private stopLists: (() => void) | null = null;
  /** Live lists held by all sockets together. */
  private listsHeld = 0;

  constructor(
    private readonly $: HubDeps,
    revocationCheckMs = 2_000,
    /** A socket that has not sent a valid `init` by then is closed (4008): it holds a connection for nothing. */
    private readonly initTimeoutMs = 10_000,
  ) {
    this.stopFeed = $.data.changes.subscribe((entities) => this.scheduleRefresh(entities));
    this.tokenChecks = new LoopFailures("checking live sessions' tokens", $.log);
    this.revocationTimer = setInterval(() => {
      const begun = this.tokenChecks.begin();
      this.closeRevoked().catch((error) => this.tokenChecks.failed(error, { begun }));
    }, revocationCheckMs);
    this.revocationTimer.unref();
  }

  open(socket: LiveSocket, headerLogin: Login | null = null): Session {
    const session: Session = {
      id: crypto.randomUUID(),
      socket,
      headerLogin,
      token: null,
      principal: null,
      subscriptions: new Map(),
      due: new Map(),
      streams: new Map(),
      lists: new Map(),
      drainWaiters: [],
      initTimer: setTimeout(() => {
        socket.close(4008, `no valid init within ${this.initTimeoutMs / 1000} s`);
        this.close(session);
      }, this.initTimeoutMs).unref(),
    };
    this.sessions.add(session);
    return session;
  }

  close(session: Session): void {
    clearTimeout(session.initTimer);
    session.due.clear();
    for (const wake of session.drainWaiters.splice(0)) wake();
    if (session.principal && this.sessions.has(session)) {
      const load = this.load(session.principal);
      load.sockets -= 1;
      load.subscriptions -= session.subscriptions.size;
      if (load.sockets === 0) this.callers.delete(callerKey(session.principal));
    }
    for (const stop of session.streams.values()) stop();
    this.sessions.delete(session);
    if (session.lists.size > 0) {
      this.listsHeld -= session.lists.size;
      session.lists.clear();
      this.listsChanged();
    }
  }

  /**
   * Sockets open now, the live queries and execution streams they hold, and the bytes sent on them that
   * their clients have not read yet (read by /metrics).
   */
  counts(): { sockets: number; subscriptions: number; streams: number; unsentBytes: number } {
    let subscriptions = 0;
    let streams = 0;
    let unsentBytes = 0;
    for (const session of this.sessions) {
      subscriptions += session.subscriptions.size;
      streams += session.streams.size;
      unsentBytes += session.socket.unsentBytes();
    }
    return { sockets: this.sessions.size, subscriptions, streams, unsentBytes };
  }

  /** Closes every socket open here (the environment is going away: deleted, evicted); clients may reconnect. */
  closeAll(code: number, reason: string): void {
    for (const session of [...this.sessions]) {
      session.socket.close(code, reason);
      this.close(session);
    }
  }

  stop(): void {
    this.stopped = true;
    this.stopFeed();
    this.stopLists?.();
    this.stopLists = null;
    clearInterval(this.revocationTimer);
  }

  async message(session: Session, raw: unknown): Promise<void> {
    let message: Message;
    try {
      const parsed = typeof raw === "string" ? JSON.parse(raw) : raw;
      if (!isObject(parsed)) throw new Error("not an object");
      message = parsed as Message;
    } catch {
      return this.error(session, { raw: preview(raw) }, "each message must be one JSON object");
    }
    if (nestsDeeperThan(message)) return this.error(session, { op: message.op }, tooDeepMessage);
    try {
      await this.handle(session, message);
    } catch (error) {
      const refusal = publicErrorOf(error);
      if (!refusal) this.logFailure(`session ${session.id}: ${String(message.op)}`, error);
      this.refuse(
        session,
        message,
        refusal ?? new PublicError("internal_error", "the server failed to answer this message"),
      );
    }
  }

  private async handle(session: Session, message: Message) {
    const eventId = message["client-event-id"];
    if (message.op === "init") return this.init(session, message);
    if (!session.principal) return this.error(session, message, "init has not run for this session");
    switch (message.op) {
      case "add-query":
        return this.addQuery(session, message);
      case "remove-query": {
        const key = canonicalJson(message.q ?? null);
        session.due.delete(key);
        if (session.subscriptions.delete(key)) this.load(session.principal).subscriptions -= 1;
        return this.send(session, { op: "remove-query-ok", q: message.q, "client-event-id": eventId });
      }
      case "subscribe-stream":
        return this.subscribeStream(session, message);
      case "subscribe-executions":
        return this.subscribeList(session, message, "executions");
      case "subscribe-runs":
        return this.subscribeList(session, message, "runs");
      case "unsubscribe":
        return this.unsubscribe(session, message);
      case "transact":
        return this.error(session, message, "writes are not accepted on this socket: run an action");
      default:
        return this.error(session, message, `unknown op ${JSON.stringify(message.op)}`);
    }
  }

  private async init(session: Session, message: Message) {
    const login = await this.loginOf(session, message["access-token"]);
    if (!login) return this.error(session, message, "init needs a valid access-token", "unauthorized");
    const { principal, token } = login;
    if (session.headerLogin && !sameCaller(principal, session.headerLogin.principal)) {
      return this.error(
        session,
        message,
        "the access-token names another caller than the Authorization header did",
        "access_denied",
      );
    }
    if (session.principal) return this.reauthenticate(session, message, principal, token);
    const load = this.load(principal);
    if (load.sockets >= this.$.limits.socketsPerCaller) {
      const limit = `at most ${this.$.limits.socketsPerCaller} sockets per caller (LIVE_MAX_SOCKETS_PER_CALLER)`;
      this.error(session, message, limit, "limit_reached");
      session.socket.close(4029, "too many sockets for this caller");
      return this.close(session);
    }
    load.sockets += 1;
    session.principal = principal;
    clearTimeout(session.initTimer);
    session.token = token;
    const release = this.$.engine.activeRelease();
    this.send(session, {
      op: "init-ok",
      "session-id": session.id,
      "client-event-id": message["client-event-id"],
      auth: { principal },
      attrs: release ? await this.$.data.attrs(release) : [],
    });
  }

  /** The login an `init` makes: its access-token's, or without one the upgrade's header's; null when neither names a caller. */
  private async loginOf(session: Session, token: unknown): Promise<Login | null> {
    if (token === undefined) return session.headerLogin;
    const principal = typeof token === "string" ? await this.$.auth.resolveToken(token) : null;
    return principal && { token: token as string, principal };
  }

  /**
   * A second `init` on an open session carries a fresh token (the old one expiring): the session and its
   * subscriptions go on under it when it names the same caller; another caller is refused.
   */
  private reauthenticate(session: Session, message: Message, principal: Principal, token: string) {
    if (!sameCaller(principal, session.principal as Principal)) {
      return this.error(session, message, "a session keeps the caller it began with; open another", "access_denied");
    }
    session.principal = principal;
    session.token = token;
    this.send(session, {
      op: "init-ok",
      "session-id": session.id,
      "client-event-id": message["client-event-id"],
      auth: { principal },
    });
  }

  private async addQuery(session: Session, message: Message) {
    const key = canonicalJson(message.q ?? null);
    if (session.subscriptions.has(key)) {
      return this.send(session, {
        op: "add-query-exists",
        q: message.q,
        "client-event-id": message["client-event-id"],
      });
    }
    const limits = this.$.limits;
    if (session.subscriptions.size >= limits.subscriptionsPerSocket) {
      const limit = `at most ${limits.subscriptionsPerSocket} live queries per socket (LIVE_MAX_SUBSCRIPTIONS_PER_SOCKET)`;
      return this.error(session, message, limit, "limit_reached");
    }
    const load = this.load(session.principal as Principal);
    if (load.subscriptions >= limits.subscriptionsPerCaller) {
      const limit = `at most ${limits.subscriptionsPerCaller} live queries per caller (LIVE_MAX_SUBSCRIPTIONS_PER_CALLER)`;
      return this.error(session, message, limit, "limit_reached");
    }
    const release = this.$.engine.requireActiveRelease();
    const returnType: ResultShape = message["return-type"] === "tree" ? "tree" : "join-rows";
    const reads = this.$.data.entitiesRead(release, message.q);
    const result = await this.run(session, release, message.q, returnType);
    // Counted once its result is in: the caps were checked before the await, so a burst may pass them by
    // the few queries in flight at once, never more.
    if (!session.subscriptions.has(key) && this.sessions.has(session)) load.subscriptions += 1;
    session.subscriptions.set(key, { q: message.q, returnType, reads, last: JSON.stringify(result) });
    this.deliver(session, [key], { answer: { eventId: message["client-event-id"] } });
  }

  /**
   * Follows an execution wherever it runs (engine.follow): its status, each log line (from the one after
   * `after-seq`, for a client resuming a stream), its end. The first event is sent before this returns;
   * the rest streams, each line once the socket sent the one before, until the end or the socket closes.
   */
  private async subscribeStream(session: Session, message: Message) {
    const id = message["execution-id"];
    if (typeof id !== "string") return this.error(session, message, "subscribe-stream needs an execution-id");
    const afterSeq = message["after-seq"];
    if (afterSeq !== undefined && (!Number.isSafeInteger(afterSeq) || (afterSeq as number) < -1)) {
      return this.error(session, message, "after-seq must be the seq of a log line (a whole number, -1 for all)");
    }
    const key = id.toLowerCase();
    const stop = new AbortController();
    const events = this.$.engine.executions.follow(session.principal as Principal, key, {
      signal: stop.signal,
      storedLogs: true,
      afterSeq: afterSeq as number | undefined,
    });
    const first = await events.next();
    const eventId = message["client-event-id"];
    const append = (event: ExecutionEvent) => {
      const fields =
        event.type === "log" ? { log: event.line, at: event.at, seq: event.seq } : streamStatus(event.execution);
      this.send(session, { op: "stream-append", "execution-id": key, "client-event-id": eventId, ...fields });
    };
    if (first.done) return;
    append(first.value);
    const ended = first.value.type === "status" && isTerminal(first.value.execution.status);
    if (ended || session.streams.has(key)) {
      await events.return(undefined);
      return;
    }
    session.streams.set(key, () => stop.abort());
    void (async () => {
      try {
        for await (const event of events) {
          append(event);
          await this.sent(session);
        }
      } catch (error) {
        this.logFailure(`subscribe-stream of ${key}`, error);
      } finally {
        session.streams.delete(key);
      }
    })();
  }

  /**
   * A live list: every new or changed row of the executions (or runs) list that the caller may see and
   * the filter keeps, pushed as `executions-changed` (`runs-changed`) under the client's `subscription-id`.
   */
  private subscribeList(session: Session, message: Message, kind: ListKind) {
    const id = message["subscription-id"];
    if (typeof id !== "string" || id.length === 0 || id.length > 200) {
      return this.error(
        session,
        message,
        `subscribe-${kind} needs a subscription-id (a string of 1 to 200 characters)`,
      );
    }
    if (session.lists.has(id)) return this.error(session, message, `subscription-id ${JSON.stringify(id)} is in use`);
    const limit = this.$.limits.subscriptionsPerSocket;
    if (session.lists.size >= limit) {
      return this.error(
        session,
        message,
        `at most ${limit} live lists per socket (LIVE_MAX_SUBSCRIPTIONS_PER_SOCKET)`,
        "limit_reached",
      );
    }
    const filter = listFilterOf(kind, session.principal as Principal, message.filter);
    session.lists.set(id, { kind, filter });
    this.listsHeld += 1;
    this.listsChanged();
    this.send(session, {
      op: `subscribe-${kind}-ok`,
      "subscription-id": id,
      "client-event-id": message["client-event-id"],
    });
  }

  /** Ends a live list (by `subscription-id`) or an execution stream (by `execution-id`); unknown ones too, quietly. */
  private unsubscribe(session: Session, message: Message) {
    const id = message["subscription-id"];
    const executionId = message["execution-id"];
    if (typeof id === "string") {
      if (session.lists.delete(id)) this.listsHeld -= 1;
      this.listsChanged();
    } else if (typeof executionId === "string") {
      session.streams.get(executionId.toLowerCase())?.();
    } else {
      return this.error(session, message, "unsubscribe needs a subscription-id or an execution-id");
    }
    this.send(session, {
      op: "unsubscribe-ok",
      "subscription-id": id,
      "execution-id": executionId,
      "client-event-id": message["client-event-id"],
    });
  }

  /** Hears the engine's list changes while some socket holds a live list, and stops when none does (no work for nobody). */
  private listsChanged() {
    const wanted = !this.stopped && this.listsHeld > 0;
    if (wanted && !this.stopLists) this.stopLists = this.$.engine.lists.subscribe((changes) => this.pushLists(changes));
    if (!wanted && this.stopLists) {
      this.stopLists();
      this.stopLists = null;
    }
  }

  private pushLists(changes: ListChanges) {
    const publicUrl = this.$.publicUrl();
    for (const session of this.sessions) {
      const principal = session.principal;
      if (!principal) continue;
      for (const [id, { kind, filter }] of session.lists) {
        const { items, left } = listItems(kind, principal, filter, changes, publicUrl);
        if (items.length === 0 && left.length === 0) continue;
        const message = { op: `${kind}-changed`, "subscription-id": id, items };
        this.send(session, left.length > 0 ? { ...message, left } : message);
      }
    }
  }

  private load(principal: Principal): CallerLoad {
    const key = callerKey(principal);
    let load = this.callers.get(key);
    if (!load) {
      load = { sockets: 0, subscriptions: 0 };
      this.callers.set(key, load);
    }
    return load;
  }

  /**
   * One refresh pass at a time: changes that arrive while one runs are gathered and answered by a
   * single next pass, so a burst of writes costs two passes, not one per write. A pass that makes more
   * query runs than LIVE_REFRESH_BUDGET is followed by a pause of LIVE_OVERLOAD_REFRESH_MS: while writes
   * keep calling for that much work, refreshes are periodic, and the share of the server they take is
   * bounded whatever the number of writes.
   */
  private scheduleRefresh(entities: ReadonlySet<string>) {
    for (const entity of entities) this.pendingEntities.add(entity);
    if (this.refreshing) return;
    this.refreshing = true;
    void (async () => {
      while (this.pendingEntities.size > 0 && !this.stopped) {
        const next = this.pendingEntities;
        this.pendingEntities = new Set();
        const runs = this.refreshRuns(next);
        await this.refresh(runs).catch((error) => this.logFailure("live refresh", error));
        if (runs.length > this.$.limits.refreshBudget) await pause(this.$.limits.overloadRefreshMs);
      }
      this.refreshing = false;
    })();
  }

  /** The query runs a change calls for: one per caller and query among the subscriptions that read a touched entity. */
  private refreshRuns(entities: ReadonlySet<string>): RefreshRun[] {
    const runs = new Map<string, RefreshRun>();
    for (const session of this.sessions) {
      const principal = session.principal;
      if (!principal) continue;
      for (const [key, sub] of session.subscriptions) {
        if (![...sub.reads].some((entity) => entities.has(entity))) continue;
        const runKey = `${principal.kind}\u0000${principal.id}\u0000${sub.returnType}\u0000${key}`;
        const run = runs.get(runKey);
        if (run) run.subscribers.push({ session, key, sub });
        else runs.set(runKey, { session, sub, subscribers: [{ session, key, sub }] });
      }
    }
    return [...runs.values()];
  }

  /**
   * Runs each query once, one after the other with a turn of the event loop between them, so requests
   * arriving during a long pass are answered in between (each waits for one query, not the pass); each
   * socket then gets one `refresh-ok` with its changed results.
   */
  private async refresh(runs: RefreshRun[]) {
    const release = this.$.engine.activeRelease();
    if (!release) return;
    const changed = new Map<Session, string[]>();
    for (const { session, sub, subscribers } of runs) {
      await new Promise((resolve) => setImmediate(resolve));
      if (this.stopped) return;
      const json = await this.run(session, release, sub.q, sub.returnType).then(
        (result) => JSON.stringify(result),
        () => null,
      );
      if (json === null) continue;
      for (const subscriber of subscribers) {
        // Gone (socket closed, query removed) or unchanged since last sent: nothing to say.
        if (subscriber.session.subscriptions.get(subscriber.key) !== subscriber.sub) continue;
        if (subscriber.sub.last === json) continue;
        subscriber.sub.last = json;
        const keys = changed.get(subscriber.session) ?? [];
        keys.push(subscriber.key);
        changed.set(subscriber.session, keys);
      }
    }
    for (const [session, keys] of changed) this.deliver(session, keys);
  }

  /**
   * Results (answers to `add-query`, refreshes) are worth only their latest state: while the socket has
   * bytes the client has not read, a result is held (one per subscription, whatever the number of
   * writes) and its latest state goes out when the socket drains. A slow reader gets fewer refreshes,
   * never a lost one, and what the server holds for it is bounded by its subscriptions.
   */
  private deliver(session: Session, keys: string[], due: DueResult = REFRESH) {
    if (!this.sessions.has(session)) return;
    // A refresh of a result whose answer is still due goes out as that answer, with the latest result.
    for (const key of keys) if (due.answer || !session.due.has(key)) session.due.set(key, due);
    if (session.socket.unsentBytes() > 0) this.$.telemetry.liveResults("held", keys.length);
    else this.pump(session, "sent");
  }

  /** Bun sent some of what the socket held, or all: once all, held results and waiting streams go on. */
  drained(session: Session): void {
    if (session.socket.unsentBytes() > 0) return;
    for (const wake of session.drainWaiters.splice(0)) wake();
    this.pump(session, "sent_late");
  }

  /**
   * Sends the due results while the socket has nothing unsent: each answer on its own, the refreshes
   * together in one `refresh-ok`. What is left waits for the next drain, so however many results are
   * due, at most one message waits in Bun's buffer beyond what the client has not read.
   */
  private pump(session: Session, delivery: "sent" | "sent_late") {
    let sent = 0;
    while (session.due.size > 0 && session.socket.unsentBytes() === 0) {
      const [key, due] = session.due.entries().next().value as [string, DueResult];
      const keys = due.answer ? [key] : [...session.due].flatMap(([k, d]) => (d.answer ? [] : [k]));
      const subs = keys.flatMap((k) => {
        session.due.delete(k);
        return session.subscriptions.get(k) ?? [];
      });
      if (subs.length === 0) continue;
      sent += subs.length;
      this.sendText(session, due.answer ? addQueryOk(subs[0] as Subscription, due.answer.eventId) : refreshOk(subs));
    }
    if (sent > 0) this.$.telemetry.liveResults(delivery, sent);
  }

  /** Resolves once the socket has sent everything it was given (or closed): a stream's next line waits for it. */
  private sent(session: Session): Promise<void> {
    if (session.socket.unsentBytes() === 0 || !this.sessions.has(session)) return Promise.resolve();
    return new Promise((resolve) => session.drainWaiters.push(resolve));
  }

  private async run(session: Session, release: LoadedRelease, q: unknown, returnType: ResultShape) {
    const principal = session.principal as Principal;
    if (returnType === "tree") return this.$.data.query(principal, release, q, "objects");
    const triples = (await this.$.data.query(principal, release, q, "triples")) as { result: unknown };
    return triples.result;
  }

  /** Closes the sessions whose token no longer signs anyone in: one store read for all of them. */
  private async closeRevoked() {
    const users = [...this.sessions].filter((s) => s.token && s.principal?.kind === "user");
    if (users.length === 0) return;
    const valid = await this.$.auth.stillValid(users.map((s) => s.token as string));
    this.tokenChecks.worked();
    for (const session of users) {
      if (valid.has(session.token as string)) continue;
      session.socket.close(4001, "the access token was revoked");
      this.close(session);
    }
  }

  /**
   * Work that failed: the database away is a warning with its public message; anything else a bug, logged
   * with its stack (never a failed statement's parameters: `loggable`).
   */
  private logFailure(what: string, error: unknown) {
    const refusal = publicErrorOf(error);
    this.$.log(`${what} failed: ${refusal ? refusal.message : loggable(error)}`, {
      level: refusal ? "warn" : "error",
    });
  }

  private send(session: Session, message: Record<string, unknown>) {
    this.sendText(session, JSON.stringify(message));
  }

  /**
   * Bun drops a message sent while 16 MiB the client has not read are waiting (its default
   * `backpressureLimit`): the client would miss it without knowing. Results and stream lines wait for
   * the socket to drain, so only a client that keeps asking without reading the answers gets there; its
   * socket is closed instead, with FELL_BEHIND, and the client reconnects and asks again (a stream after
   * its last line).
   */
  private sendText(session: Session, text: string) {
    if (!this.sessions.has(session) || session.socket.send(text)) return;
    const unread = session.socket.unsentBytes();
    this.$.telemetry.liveSocketFellBehind();
    this.$.log(`session ${session.id}: closed (${FELL_BEHIND}): the client left ${unread} bytes unread`, {
      level: "warn",
    });
    session.socket.close(FELL_BEHIND, "the client fell behind: reconnect");
    this.close(session);
  }

  private error(session: Session, original: unknown, message: string, code: ErrorCode = "invalid_request") {
    this.refuse(session, original, new PublicError(code, message));
  }

  /** A refusal as `error`, with the code and the status the HTTP adapter would answer it with. */
  private refuse(session: Session, original: unknown, refusal: PublicError) {
    const eventId =
      typeof original === "object" && original !== null ? (original as Message)["client-event-id"] : undefined;
    this.send(session, {
      ...refusal.fields,
      op: "error",
      status: refusal.status,
      error: refusal.code,
      "original-event": original,
      message: refusal.message,
      "client-event-id": eventId,
    });
  }
}

/**
 * The start of a message that is no JSON object, for `original-event`. Elysia hands over JSON already
 * parsed: an array is not turned back into text, since `String()` of one nested 5,000 deep overflows
 * the stack (the message got no answer at all).
 */
const preview = (raw: unknown) => (Array.isArray(raw) ? "[…]" : String(raw).slice(0, 200));

/**
 * A message with one more field whose value is JSON text already: a subscription's result, kept as
 * sent last (megabytes, maybe), is spliced in rather than serialised again.
 */
const withJson = (message: Record<string, unknown>, field: string, json: string) =>
  `${JSON.stringify(message).slice(0, -1)},${JSON.stringify(field)}:${json}}`;

const addQueryOk = (sub: Subscription, eventId: unknown) =>
  withJson({ op: "add-query-ok", q: sub.q, "client-event-id": eventId }, "result", sub.last);

const refreshOk = (subs: Subscription[]) =>
  withJson(
    { op: "refresh-ok" },
    "computations",
    `[${subs.map((sub) => withJson({ "instaql-query": sub.q }, "instaql-result", sub.last)).join(",")}]`,
  );

/** A wait that does not keep the process alive. */
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms).unref());
