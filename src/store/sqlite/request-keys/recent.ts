/** The seed of a key's second hash: with `hashKey` (seed 0), 64 bits that place and tell apart the entries. */
const SECOND_SEED = 0x9e3779b9;

export const secondHash = (text: string): number => Bun.hash.xxHash32(text, SECOND_SEED);

const FIRST_CAPACITY = 1024;

/**
 * Keys committed and not merged yet, by their two hashes, each with the id of the execution holding it:
 * open addressing in typed arrays, so the tens of thousands of keys a batch gathers cost the collector two
 * arrays, not tens of thousands of objects. Two keys could share both hashes, so an entry is only a
 * candidate: `find` asks its caller whether the execution holds the key. Nothing is ever removed (a
 * forgotten execution's entry is a candidate its caller refuses); the whole table is dropped once merged.
 */
export class RecentKeys {
  /** Both hashes of the slot's key, side by side. */
  private hashes: Uint32Array;
  /** The slot's execution id; undefined while the slot is empty. */
  private ids: (string | undefined)[];
  private mask: number;
  size = 0;

  /** `capacity`: slots, a power of two (the table grows by doubling once half full). */
  constructor(capacity = FIRST_CAPACITY) {
    this.hashes = new Uint32Array(capacity * 2);
    this.ids = new Array(capacity);
    this.mask = capacity - 1;
  }

  add(first: number, second: number, id: string): void {
    // At most half full: a miss, the common lookup, ends within a probe or two.
    if ((this.size + 1) * 2 > this.ids.length) this.grow();
    this.place(first, second, id);
    this.size++;
  }

  /** The first entry with both hashes whose execution `holds` says holds the key, or null. */
  find(first: number, second: number, holds: (id: string) => boolean): string | null {
    for (let slot = second & this.mask; ; slot = (slot + 1) & this.mask) {
      const id = this.ids[slot];
      if (id === undefined) return null;
      if (this.hashes[slot * 2] === first && this.hashes[slot * 2 + 1] === second && holds(id)) return id;
    }
  }

  /** Every entry's first hash (`hashKey`): what a key filter being built takes. */
  forEachFirstHash(take: (hash: number) => void): void {
    for (let slot = 0; slot < this.ids.length; slot++) {
      if (this.ids[slot] !== undefined) take(this.hashes[slot * 2] as number);
    }
  }

  private place(first: number, second: number, id: string): void {
    let slot = second & this.mask;
    while (this.ids[slot] !== undefined) slot = (slot + 1) & this.mask;
    this.hashes[slot * 2] = first;
    this.hashes[slot * 2 + 1] = second;
    this.ids[slot] = id;
  }

  private grow(): void {
    const { hashes, ids } = this;
    this.hashes = new Uint32Array(hashes.length * 2);
    this.ids = new Array(ids.length * 2);
    this.mask = ids.length * 2 - 1;
    for (let slot = 0; slot < ids.length; slot++) {
      const id = ids[slot];
      if (id !== undefined) this.place(hashes[slot * 2] as number, hashes[slot * 2 + 1] as number, id);
    }
  }
}
