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

export async function until<T>(what: string, probe: () => T | undefined | false | null | Promise<T | undefined | false | null>, options: UntilOptions = {}): Promise<T> {
  const { timeoutMs = 20_000, intervalMs = 50, diagnose, before = Infinity } = options;
  const deadline = Math.min(Date.now() + timeoutMs, before);
  for (;;) {
    const value = await probe();
    if (value && Date.now() < before) return value;
    if (value) throw new Error(`${what} was seen only after the moment it could prove anything (${before - Date.now()} ms)${diagnose ? `\n${diagnose()}` : ''}`);
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${diagnose ? `\n${diagnose()}` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
