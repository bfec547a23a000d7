/** Bits per key at capacity, and probes per key: a false positive rate of about 1 %. */
const BITS_PER_KEY = 10;
const PROBES = 7;

/** A key's hash as the filter takes it (`keyOf`'s text, hashed once for the filter and the recent keys). */
export const hashKey = (text: string): number => Bun.hash.xxHash32(text, 0);

/**
 * A Bloom filter of keys, by their `hashKey`: `mayHold` is false only for a key never added, so a lookup
 * it rules out needs no index read. It never forgets (a deleted key stays a possible one, which costs a
 * read, not an error) and does not grow: past `capacity` keys its false positives rise, and its owner
 * builds a larger one.
 */
export class KeyFilter {
  private readonly bits: Uint32Array;
  private readonly size: number;
  count = 0;

  constructor(readonly capacity: number) {
    this.size = Math.max(64, capacity * BITS_PER_KEY);
    this.bits = new Uint32Array(Math.ceil(this.size / 32));
  }

  add(hash: number): void {
    this.count++;
    let h = hash;
    const step = mix(h);
    for (let i = 0; i < PROBES; i++) {
      const bit = h % this.size;
      this.bits[bit >>> 5] = (this.bits[bit >>> 5] as number) | (1 << (bit & 31));
      h = (h + step) >>> 0;
    }
  }

  mayHold(hash: number): boolean {
    let h = hash;
    const step = mix(h);
    for (let i = 0; i < PROBES; i++) {
      const bit = h % this.size;
      if (((this.bits[bit >>> 5] as number) & (1 << (bit & 31))) === 0) return false;
      h = (h + step) >>> 0;
    }
    return true;
  }

  get full(): boolean {
    return this.count > this.capacity;
  }
}

/** The probe step of double hashing, derived from the key's hash (one hash per key), never 0. */
function mix(h: number): number {
  const x = Math.imul(h ^ (h >>> 16), 0x85ebca6b) >>> 0;
  return ((x ^ (x >>> 13)) | 1) >>> 0;
}
