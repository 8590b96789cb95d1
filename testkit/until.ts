// The tests' one way to wait: for a condition, never for a time. A probe is asked until it returns a value
// (anything but undefined, false, null, 0 or ''), which until() returns; the bound is only how long a failing
// test takes to say so, so it is generous (a loaded machine is slow, not wrong) and the message names what
// was awaited and, when given, a diagnosis (what the probe last saw, a process's output).

export interface UntilOptions {
  /** How long before the wait fails (default 20 s). */
  timeoutMs?: number;
  /** How long between probes (default 50 ms). */
  intervalMs?: number;
  /** Added to the failure message (a process's output, say). */
  diagnose?: () => string;
  /**
   * A moment (Date.now()) after which the condition proves nothing (a cached entry expires, a poll comes): the
   * wait gives up at it, and a condition first seen after it fails the wait instead of passing it.
   */
  before?: number;
}

const NO_ANSWER = Symbol('no answer');

export async function until<T>(
  what: string,
  probe: () => T | undefined | false | null | Promise<T | undefined | false | null>,
  options: UntilOptions = {},
): Promise<T> {
  const { timeoutMs = 20_000, intervalMs = 50, diagnose, before = Infinity } = options;
  const started = Date.now();
  const deadline = Math.min(started + timeoutMs, before);
  const failure = (why: string) => new Error(`${why} waiting for ${what}${diagnose ? `\n${diagnose()}` : ''}`);
  for (;;) {
    // A probe that hangs (a request nobody answers) is bounded by the same deadline as the wait.
    let timer: NodeJS.Timeout | undefined;
    const answer = await Promise.race([
      Promise.resolve().then(probe),
      new Promise<typeof NO_ANSWER>(
        (resolve) => (timer = setTimeout(() => resolve(NO_ANSWER), Math.max(0, deadline - Date.now()))),
      ),
    ]).finally(() => clearTimeout(timer));
    if (answer === NO_ANSWER) throw failure(`the probe had not answered after ${Date.now() - started} ms`);
    if (answer && Date.now() < before) return answer;
    if (answer)
      throw new Error(
        `${what} was seen only after the moment it could prove anything (${before - Date.now()} ms)${diagnose ? `\n${diagnose()}` : ''}`,
      );
    if (Date.now() > deadline)
      throw failure(
        `timed out after ${Date.now() - started} ms${deadline === before ? ' (the moment the condition could still prove something)' : ''}`,
      );
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
