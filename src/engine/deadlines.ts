/** The longest delay a timer takes (a longer one fires at once). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** A wait in its queue: a node of a doubly linked list, so that leaving it costs the same wherever it is. */
interface Waiting {
  at: number;
  expire: () => void;
  prev: Waiting | null;
  next: Waiting | null;
}

/** The waits of one length, oldest first: their deadlines come in the order they were added. */
class Queue {
  head: Waiting | null = null;
  tail: Waiting | null = null;
  timer: Timer | null = null;

  add(wait: Waiting) {
    wait.prev = this.tail;
    if (this.tail) this.tail.next = wait;
    else this.head = wait;
    this.tail = wait;
  }

  remove(wait: Waiting) {
    if (wait.prev) wait.prev.next = wait.next;
    else if (this.head === wait) this.head = wait.next;
    else return; // already expired and unlinked
    if (wait.next) wait.next.prev = wait.prev;
    else this.tail = wait.prev;
    wait.prev = null;
    wait.next = null;
  }
}

/**
 * Bounds waits without a timer each (issue 14: an invoke whose handler ends at once should not arm and
 * clear one). Waits of the same length end in the order they began, so each length keeps one queue and
 * one timer, set for its oldest wait: a wait that ends in time only leaves the queue, and the timer, when
 * it fires, ends what is due and sets itself for the next. Under steady load the timer fires about once
 * per wait length, not once per wait.
 */
export class Deadlines {
  private readonly queues = new Map<number, Queue>();

  constructor(private readonly now: () => number = performance.now.bind(performance)) {}

  /** `promise`'s value, or undefined when `ms` pass first (the promise is left to run). */
  within<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
    // NaN waits not at all; past a timer's range (~24.8 days), that range.
    const length = ms > 0 ? Math.min(ms, MAX_TIMER_MS) : 0;
    return new Promise<T | undefined>((resolve, reject) => {
      const queue = this.queueOf(length);
      const wait: Waiting = { at: this.now() + length, expire: () => resolve(undefined), prev: null, next: null };
      queue.add(wait);
      if (queue.timer === null) this.arm(length, queue);
      promise.then(
        (value) => {
          queue.remove(wait);
          resolve(value);
        },
        (error: unknown) => {
          queue.remove(wait);
          reject(error);
        },
      );
    });
  }

  /** Waits not yet ended. */
  get pending(): number {
    let count = 0;
    for (const queue of this.queues.values()) for (let w = queue.head; w; w = w.next) count++;
    return count;
  }

  private queueOf(length: number): Queue {
    let queue = this.queues.get(length);
    if (!queue) {
      queue = new Queue();
      this.queues.set(length, queue);
    }
    return queue;
  }

  private arm(length: number, queue: Queue) {
    const head = queue.head;
    if (!head) {
      queue.timer = null;
      // An idle length keeps no queue: the callers' lengths are few, but need not be.
      this.queues.delete(length);
      return;
    }
    queue.timer = setTimeout(() => this.expire(length, queue), Math.max(0, head.at - this.now()));
  }

  private expire(length: number, queue: Queue) {
    const now = this.now();
    for (let wait = queue.head; wait && wait.at <= now; wait = queue.head) {
      queue.remove(wait);
      wait.expire();
    }
    this.arm(length, queue);
  }
}
