// Fairness for deliveries: at most `perLane` attempts in flight per endpoint and `total` in the process. An
// endpoint that hangs on every request fills its own lane and nothing else, so healthy endpoints keep their
// pace.

class Semaphore {
  private active = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly limit: number) {}

  get idle(): boolean {
    return this.active === 0 && this.waiting.length === 0;
  }

  async acquire(): Promise<void> {
    if (this.active < this.limit) {
      this.active++;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.active--;
  }
}

export class Lanes {
  private readonly lanes = new Map<string, Semaphore>();
  private readonly overall: Semaphore;

  constructor(
    private readonly perLane: number,
    total: number,
  ) {
    this.overall = new Semaphore(total);
  }

  /** Runs `task` once its lane and the process have room. */
  async run<T>(lane: string, task: () => Promise<T>): Promise<T> {
    let semaphore = this.lanes.get(lane);
    if (!semaphore) this.lanes.set(lane, (semaphore = new Semaphore(this.perLane)));
    await semaphore.acquire();
    try {
      await this.overall.acquire();
      try {
        return await task();
      } finally {
        this.overall.release();
      }
    } finally {
      semaphore.release();
      if (semaphore.idle) this.lanes.delete(lane);
    }
  }
}
