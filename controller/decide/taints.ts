// nodecare's own taints, as the decision and the writes both recognise them.

import type { NodeTaint } from './types.ts';

/** The effect of both nodecare taints: a taint with our key and another effect is someone else's. */
export const OWN_TAINT_EFFECT = 'NoSchedule';

/** Whether the nodecare taint `key` is on: the one definition the decision and the writes share. */
export function hasTaint(taints: readonly NodeTaint[], key: string): boolean {
  return taints.some((t) => t.key === key && t.effect === OWN_TAINT_EFFECT);
}
