// Bounded `extension` label values (docs/conventions.md 12; issue 20 item 8). Extension names come from input:
// any node annotation may choose one, so a metric labelled by extension would otherwise get a series for every
// name any node ever wrote. Shared by the agent and the controller.

/** The `extension` label shared by every extension name beyond the bound (extensionSeries). */
export const OTHER_EXTENSION_LABEL = '_other';
/** Extension names no SystemExtension declares that get series of their own: the most widely required. */
export const MAX_UNDECLARED_EXTENSION_SERIES = 32;

/** One (node, extension) pair as the extension-nodes gauge counts it. */
export interface ExtensionPair {
  extension: string;
  state: string;
}

/**
 * Nodes per extension label and state, with label values bounded whatever nodes register: a name a
 * SystemExtension declares (an admin's choice) has its own series; of the other names (chosen by node
 * annotations) the `maxUndeclared` required by the most nodes (then by name) have theirs, and the rest are
 * counted together under OTHER_EXTENSION_LABEL. Names no longer required have no series.
 */
export function extensionSeries(
  pairs: Iterable<ExtensionPair>,
  declared: ReadonlySet<string>,
  maxUndeclared = MAX_UNDECLARED_EXTENSION_SERIES,
): Array<{ extension: string; state: string; nodes: number }> {
  const byName = new Map<string, Map<string, number>>();
  for (const { extension, state } of pairs) {
    const states = byName.get(extension) ?? new Map<string, number>();
    states.set(state, (states.get(state) ?? 0) + 1);
    byName.set(extension, states);
  }
  const total = (states: Map<string, number>): number => [...states.values()].reduce((a, b) => a + b, 0);
  const own = new Set(
    [...byName]
      .filter(([name]) => !declared.has(name))
      .sort(([a, x], [b, y]) => total(y) - total(x) || (a < b ? -1 : a > b ? 1 : 0))
      .slice(0, maxUndeclared)
      .map(([name]) => name),
  );
  const series = new Map<string, { extension: string; state: string; nodes: number }>();
  for (const [name, states] of byName) {
    const extension = declared.has(name) || own.has(name) ? name : OTHER_EXTENSION_LABEL;
    for (const [state, nodes] of states) {
      const key = `${extension}\u0000${state}`;
      const entry = series.get(key) ?? { extension, state, nodes: 0 };
      entry.nodes += nodes;
      series.set(key, entry);
    }
  }
  return [...series.values()];
}
