/** A real WebSocket client for /session that queues what the server sends. */
export class LiveClient {
  private readonly received: Record<string, unknown>[] = [];
  private readonly waiters: {
    match: (m: Record<string, unknown>) => boolean;
    resolve: (m: Record<string, unknown>) => void;
  }[] = [];
  closed: { code: number; reason: string } | null = null;
  private closeWaiters: (() => void)[] = [];

  private constructor(private readonly socket: WebSocket) {
    socket.onmessage = (event) => {
      const message = JSON.parse(String(event.data)) as Record<string, unknown>;
      const waiter = this.waiters.find((w) => w.match(message));
      if (waiter) {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        waiter.resolve(message);
      } else {
        this.received.push(message);
      }
    };
    socket.onclose = (event) => {
      this.closed = { code: event.code, reason: event.reason };
      for (const resolve of this.closeWaiters.splice(0)) resolve();
    };
  }

  /** Opens /session; `headers` go on the upgrade (a browser can send none: Bun's WebSocket can). */
  static async connect(baseUrl: string, headers?: Record<string, string>): Promise<LiveClient> {
    const socket = new WebSocket(`${baseUrl.replace(/^http/, "ws")}/session`, { headers });
    await new Promise((resolve, reject) => {
      socket.onopen = resolve;
      socket.onerror = reject;
    });
    return new LiveClient(socket);
  }

  send(message: unknown): void {
    this.socket.send(typeof message === "string" ? message : JSON.stringify(message));
  }

  /** The next message (already queued or still to come) for which `match` holds. */
  // biome-ignore lint/suspicious/noExplicitAny: tests inspect protocol messages freely
  next(match: (m: Record<string, any>) => boolean = () => true, timeoutMs = 5_000): Promise<Record<string, any>> {
    const index = this.received.findIndex(match);
    if (index >= 0) return Promise.resolve(this.received.splice(index, 1)[0] as Record<string, unknown>);
    return new Promise((resolve, reject) => {
      const waiter = {
        match,
        resolve: (m: Record<string, unknown>) => {
          clearTimeout(timer);
          resolve(m);
        },
      };
      const timer = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        const queued = JSON.stringify(this.received);
        const shown = queued.length > 2_000 ? `${queued.slice(0, 2_000)}… (${queued.length} characters)` : queued;
        reject(new Error(`no matching message within ${timeoutMs} ms; queued: ${shown}`));
      }, timeoutMs);
      this.waiters.push(waiter);
    });
  }

  op(op: string, timeoutMs?: number) {
    return this.next((m) => m.op === op, timeoutMs);
  }

  /** Messages received and not taken by `next`. */
  pending(): Record<string, unknown>[] {
    return [...this.received];
  }

  whenClosed(): Promise<void> {
    if (this.closed) return Promise.resolve();
    return new Promise((resolve) => this.closeWaiters.push(resolve));
  }

  close(): void {
    this.socket.close();
  }
}
