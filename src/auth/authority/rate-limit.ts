/**
 * Failed sign-ins counted per key (a user, an address) over a sliding window: past `limit` failures
 * within `windowMs` the key is blocked until its oldest failure leaves the window. In memory, per
 * process: an attacker spreading guesses over N instances gets N times the limit, still far too few.
 */
export class Attempts {
  private readonly failures = new Map<string, number[]>();

  constructor(private readonly settings: { limit: number; windowMs: number }) {}

  blocked(keys: string[], now: number): boolean {
    return keys.some((key) => this.recent(key, now).length >= this.settings.limit);
  }

  fail(keys: string[], now: number): void {
    for (const key of keys) this.failures.set(key, [...this.recent(key, now), now]);
    // Keys whose failures all left the window are forgotten, so the map stays as small as the attack.
    if (this.failures.size > 10_000) {
      for (const key of this.failures.keys()) if (this.recent(key, now).length === 0) this.failures.delete(key);
    }
  }

  private recent(key: string, now: number): number[] {
    return (this.failures.get(key) ?? []).filter((at) => at > now - this.settings.windowMs);
  }
}
