import { workerEntry } from "../worker-entry.ts";
import type { KeyWrite, RequestKeyWriter } from "./file.ts";
import type { WorkerAnswer, WorkerRequest } from "./worker.ts";

/** Applies the index's writes in the order given; each promise settles once its transaction has. */
export interface KeyWriterHost {
  write(op: KeyWrite): Promise<void>;
  close(): Promise<void>;
}

/**
 * Writes on a worker thread with its own connection to the request-key file and to the database (whose
 * executions it reads the keys from), so the serving thread spends nothing on the index's random inserts.
 * Started at the first write (an idle server has no thread for it); not holding the process open, so a
 * store nobody closes cannot keep it alive.
 */
export class WorkerKeyWriter implements KeyWriterHost {
  private worker: Worker | null = null;
  private nextId = 0;
  private readonly waiting = new Map<number, { done: () => void; fail: (error: Error) => void }>();

  constructor(
    private readonly path: string,
    private readonly databasePath: string,
    private readonly generationSize: number,
  ) {}

  write(op: KeyWrite): Promise<void> {
    return this.send(op);
  }

  async close(): Promise<void> {
    if (!this.worker) return;
    try {
      await this.send({ kind: "close" });
    } finally {
      // Gone already if the thread failed while closing.
      this.worker?.terminate();
      this.worker = null;
    }
  }

  private send(request: KeyWrite | { kind: "close" }): Promise<void> {
    const worker = this.worker ?? this.start();
    const id = ++this.nextId;
    return new Promise((done, fail) => {
      this.waiting.set(id, { done, fail });
      worker.postMessage(JSON.stringify({ ...request, id } satisfies WorkerRequest));
    });
  }

  private start(): Worker {
    const worker = new Worker(workerEntry("request-keys"));
    worker.unref();
    worker.onmessage = ({ data }: MessageEvent<WorkerAnswer>) => {
      const waiter = this.waiting.get(data.id);
      this.waiting.delete(data.id);
      if (data.ok) waiter?.done();
      else waiter?.fail(new Error(`request-key index: ${data.message}`));
    };
    worker.onerror = (event) => {
      // The thread itself failed (not one write): every write waiting fails; the next one starts a new thread.
      const error = new Error(`request-key index thread: ${event.message}`);
      for (const waiter of this.waiting.values()) waiter.fail(error);
      this.waiting.clear();
      if (this.worker === worker) this.worker = null;
      worker.terminate();
    };
    this.worker = worker;
    const open: WorkerRequest = {
      kind: "open",
      path: this.path,
      databasePath: this.databasePath,
      generationSize: this.generationSize,
      id: ++this.nextId,
    };
    worker.postMessage(JSON.stringify(open));
    return worker;
  }
}

/** Writes on the database's own connection (the file attached to it): for `:memory:`, whose index no other thread can open. */
export class ConnectionKeyWriter implements KeyWriterHost {
  constructor(private readonly writer: RequestKeyWriter) {}

  async write(op: KeyWrite): Promise<void> {
    this.writer.write(op);
  }

  async close(): Promise<void> {}
}
