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
}

export async function until<T>(what: string, probe: () => T | undefined | false | null | Promise<T | undefined | false | null>, options: UntilOptions = {}): Promise<T> {
  const { timeoutMs = 20_000, intervalMs = 50, diagnose } = options;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${diagnose ? `\n${diagnose()}` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
