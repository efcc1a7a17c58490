/**
 * A case-insensitive mapping that keeps the last-set spelling of each key (requests' CaseInsensitiveDict).
 * @example
 * const h = new CaseInsensitiveDict({ 'Content-Type': 'text/plain' });
 * h.get('content-type'); // 'text/plain'
 */
export class CaseInsensitiveDict<V = string> implements Iterable<[string, V]> {
  #store = new Map<string, [string, V]>();

  constructor(init?: Iterable<[string, V]> | Record<string, V> | CaseInsensitiveDict<V> | null) {
    if (init) this.update(init);
  }

  update(other: Iterable<[string, V]> | Record<string, V> | CaseInsensitiveDict<V>): this {
    if (other instanceof CaseInsensitiveDict) { other.forEach((v, k) => this.set(k, v)); return this; }
    const entries = isIterable(other) ? other : Object.entries(other);
    for (const [k, v] of entries) this.set(k, v);
    return this;
  }

  set(key: string, value: V): this { this.#store.set(key.toLowerCase(), [key, value]); return this; }
  get(key: string): V | undefined { return this.#store.get(key.toLowerCase())?.[1]; }
  has(key: string): boolean { return this.#store.has(key.toLowerCase()); }
  delete(key: string): boolean { return this.#store.delete(key.toLowerCase()); }
  /** Removes and returns the value (Python's `pop`). */
  pop(key: string): V | undefined { const v = this.get(key); this.delete(key); return v; }
  setdefault(key: string, value: V): V { if (!this.has(key)) this.set(key, value); return this.get(key) as V; }
  get size(): number { return this.#store.size; }
  keys(): string[] { return [...this.#store.values()].map(([k]) => k); }
  copy(): CaseInsensitiveDict<V> {
    const c = new CaseInsensitiveDict<V>();
    c.#store = new Map(this.#store);
    return c;
  }
  /** Calls `fn` with each key (as last spelled) and value; cheaper than iterating. */
  forEach(fn: (value: V, key: string) => void): void { for (const [k, v] of this.#store.values()) fn(v, k); }
  toObject(): Record<string, V> { return Object.fromEntries(this); }
  *[Symbol.iterator](): Iterator<[string, V]> { for (const [k, v] of this.#store.values()) yield [k, v]; }
  toJSON(): Record<string, V> { return this.toObject(); }
}

function isIterable<T>(x: unknown): x is Iterable<T> {
  return typeof x === 'object' && x !== null && Symbol.iterator in x;
}
