// Status conditions (metav1.Condition): lastTransitionTime moves only when the status flips, so watchers
// can tell how long a catalog has been Ready or Stalled.

import type { Condition } from '../crd/status.js';

export type { Condition };

export function setCondition(
  conditions: readonly Condition[],
  next: Omit<Condition, 'lastTransitionTime'>,
  now: Date,
): Condition[] {
  const current = conditions.find((c) => c.type === next.type);
  const lastTransitionTime = current && current.status === next.status ? current.lastTransitionTime : now.toISOString();
  return [...conditions.filter((c) => c.type !== next.type), { ...next, lastTransitionTime }].sort((a, b) =>
    a.type.localeCompare(b.type),
  );
}
