// Durations as people write them in settings and resources: "24h", "1h30m", "45s", "250ms".

const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const;
const DURATION = /^(?:[0-9]+(?:ms|s|m|h))+$/;

/** Milliseconds of a duration such as "1h30m"; undefined when the text is not one. */
export function parseDuration(text: string): number | undefined {
  if (!DURATION.test(text)) return undefined;
  let ms = 0;
  for (const [, amount, unit] of text.matchAll(/([0-9]+)(ms|s|m|h)/g))
    ms += Number(amount) * UNIT_MS[unit as keyof typeof UNIT_MS];
  return ms;
}
