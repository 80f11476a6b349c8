// Lookups by key that arrive in one turn of the event loop go to the database as one statement: under load,
// the per-statement cost of the driver and of the round trip is shared by every request of the turn.
// DataLoader-style, without its cache: every batch reads the database afresh.

interface Waiting<K, V> {
  key: K;
  resolve: (value: V | undefined) => void;
  reject: (err: unknown) => void;
}

/** Ids per statement at most, so that a burst becomes several statements and none grows without limit. */
export const MAX_KEYS = 500;

export class Coalesced<K, V> {
  private pending: Waiting<K, V>[] = [];

  /** `load` reads the distinct keys given and returns what it found by key; a key it leaves out is absent. */
  constructor(private readonly load: (keys: K[]) => Promise<Map<K, V>>) {}

  /** The value for `key`, read with the other keys asked for in this turn; rejects as their statement does. */
  get(key: K): Promise<V | undefined> {
    return new Promise((resolve, reject) => {
      // setImmediate runs after the poll phase, so every request whose bytes arrived in this turn has asked.
      if (this.pending.length === 0) setImmediate(() => this.flush());
      this.pending.push({ key, resolve, reject });
    });
  }

  private flush(): void {
    const all = this.pending;
    this.pending = [];
    for (let i = 0; i < all.length; i += MAX_KEYS) this.read(all.length <= MAX_KEYS ? all : all.slice(i, i + MAX_KEYS));
  }

  private read(batch: Waiting<K, V>[]): void {
    const keys = [...new Set(batch.map((w) => w.key))];
    let loading: Promise<Map<K, V>>;
    try {
      loading = this.load(keys);
    } catch (err) {
      loading = Promise.reject(err);
    }
    loading.then(
      (found) => {
        for (const w of batch) w.resolve(found.get(w.key));
      },
      (err: unknown) => {
        for (const w of batch) w.reject(err);
      },
    );
  }
}
