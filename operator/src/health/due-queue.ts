// The brands waiting for their check, earliest first: a binary heap with lazy removal (a brand rescheduled
// or dropped leaves its old entry behind, skipped when it surfaces).

interface Entry {
  due: number;
  key: string;
  ticket: number;
}

export class DueQueue {
  private heap: Entry[] = [];
  private readonly tickets = new Map<string, number>();
  private nextTicket = 1;

  get size(): number {
    return this.tickets.size;
  }

  /** Schedules `key` at `due`, replacing any earlier schedule of it. */
  set(key: string, due: number): void {
    const ticket = this.nextTicket++;
    this.tickets.set(key, ticket);
    this.heap.push({ due, key, ticket });
    this.up(this.heap.length - 1);
  }

  delete(key: string): void {
    this.tickets.delete(key);
  }

  has(key: string): boolean {
    return this.tickets.has(key);
  }

  /** When the earliest live entry is due; undefined when none is. */
  peek(): number | undefined {
    this.dropStale();
    return this.heap[0]?.due;
  }

  /** Removes and returns the earliest key if it is due at `now`. */
  popDue(now: number): string | undefined {
    this.dropStale();
    const top = this.heap[0];
    if (!top || top.due > now) return undefined;
    this.removeTop();
    this.tickets.delete(top.key);
    return top.key;
  }

  private dropStale(): void {
    while (this.heap.length > 0 && this.tickets.get(this.heap[0]!.key) !== this.heap[0]!.ticket) this.removeTop();
  }

  private removeTop(): void {
    const last = this.heap.pop()!;
    if (this.heap.length === 0) return;
    this.heap[0] = last;
    this.down(0);
  }

  private up(i: number): void {
    const heap = this.heap;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (heap[parent]!.due <= heap[i]!.due) return;
      [heap[parent], heap[i]] = [heap[i]!, heap[parent]!];
      i = parent;
    }
  }

  private down(i: number): void {
    const heap = this.heap;
    for (;;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let smallest = i;
      if (left < heap.length && heap[left]!.due < heap[smallest]!.due) smallest = left;
      if (right < heap.length && heap[right]!.due < heap[smallest]!.due) smallest = right;
      if (smallest === i) return;
      [heap[smallest], heap[i]] = [heap[i]!, heap[smallest]!];
      i = smallest;
    }
  }
}
