// Fairness for deliveries: at most `perLane` attempts in flight per endpoint and `total` in the process. An
// endpoint that hangs on every request fills its own lane and nothing else, so healthy endpoints keep their
// pace. The counting is p-limit's (a well-kept library, instead of a semaphore of our own).
import pLimit, { type LimitFunction } from 'p-limit';

export class Lanes {
  private readonly lanes = new Map<string, LimitFunction>();
  private readonly overall: LimitFunction;

  constructor(
    private readonly perLane: number,
    total: number,
  ) {
    this.overall = pLimit(total);
  }

  /** Runs `task` once its lane and the process have room (a lane's turn is held while it waits for the process). */
  async run<T>(lane: string, task: () => Promise<T>): Promise<T> {
    let limit = this.lanes.get(lane);
    if (!limit) this.lanes.set(lane, (limit = pLimit(this.perLane)));
    try {
      return await limit(() => this.overall(task));
    } finally {
      // p-limit counts the task done just after it settles: look once it has, and forget a lane left idle.
      setImmediate(() => {
        if (limit.activeCount === 0 && limit.pendingCount === 0 && this.lanes.get(lane) === limit)
          this.lanes.delete(lane);
      });
    }
  }
}
