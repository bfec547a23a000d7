/**
 * Hands out results in the order their work was started, whichever finishes first: `run(work, deliver)`
 * calls `deliver` with the work's value only after every earlier `deliver` has returned. A failed work
 * delivers nothing (its `run` rejects) and holds up no later one.
 */
export class InTurn {
  private last: Promise<void> = Promise.resolve();

  run<T>(work: Promise<T>, deliver: (value: T) => void): Promise<void> {
    const turn = this.last.then(async () => deliver(await work));
    this.last = turn.catch(() => undefined);
    return turn;
  }
}
