// The roll-up's counts, kept as the nodes' verdicts change (docs/adr/0009, step 2): each (node, extension) pair
// is added when a node's decision brings it and taken away when the next one replaces it, so an evaluation
// reads counts and the pairs that are not healthy instead of every pair of the fleet (listing and sorting them
// took 1.1 s of a 10,000-node start in a CPU profile, and each evaluation's cost grew with the fleet). Pure, like the evaluation (evaluate.ts) that reads it; `RollupTally.of(pairs)` is the same
// tally made at once from a list of pairs.

import { ExtensionState } from '../../api/names.ts';
import { classifyPair, type PairVerdict, type RollupPair, type SourcedPair } from './pairs.ts';

export interface ExtensionCounts {
  name: string;
  /**
   * The condition type the extension feeds. Its registrations may disagree across nodes: the type most of its
   * pairs carry wins, the first by name on a tie.
   */
  conditionType: string;
  healthy: number;
  progressing: number;
  unhealthy: number;
  unknown: number;
}

type StateField = 'healthy' | 'progressing' | 'unhealthy' | 'unknown';

/** The count each extension state adds to (ClusterHealth `extensions`, SystemExtension status). */
export const COUNT_FIELD = {
  [ExtensionState.Healthy]: 'healthy',
  [ExtensionState.Progressing]: 'progressing',
  [ExtensionState.Unhealthy]: 'unhealthy',
  [ExtensionState.Unknown]: 'unknown',
} as const satisfies Record<ExtensionState, StateField>;

/** The pairs of one condition type that are not healthy, by how they count (classifyPair). */
export interface TypeBucket {
  unevaluable: RollupPair[];
  failing: RollupPair[];
  progressing: RollupPair[];
}

/** What the evaluation reads of the pairs (evaluateRollup). */
export interface SortedPairs {
  /** Every condition type in use, with its pairs that are not healthy. */
  buckets: Map<string, TypeBucket>;
  counts: Map<string, ExtensionCounts>;
  /** Nodes with a pair in maintenance, and with maintenance planned. */
  maintained: number;
  planned: number;
}

/** How many pairs a SystemExtension's registration brought, by state (its status counts). */
export type StateCounts = Record<StateField, number> & { nodes: number };

type Verdict = Exclude<PairVerdict, 'healthy'>;

interface TypeTally {
  pairs: number;
  notHealthy: Record<Verdict, Map<string, RollupPair>>;
}

interface ExtensionTally {
  counts: Record<StateField, number>;
  /** Condition type → pairs carrying it (empty once the extension has no pair). */
  conditionTypes: Map<string, number>;
}

/** Identifies a pair among those that are not healthy (a node has one pair an extension). */
const pairKey = (pair: RollupPair): string => `${pair.node}/${pair.extension}`;

const zero = (): Record<StateField, number> => ({ healthy: 0, progressing: 0, unhealthy: 0, unknown: 0 });

export class RollupTally {
  private readonly types = new Map<string, TypeTally>();
  private readonly extensions = new Map<string, ExtensionTally>();
  /** Node → its pairs in maintenance / with maintenance planned. */
  private readonly maintained = new Map<string, number>();
  private readonly planned = new Map<string, number>();
  /** Extension → the counts of its pairs that a SystemExtension registered. */
  private readonly registered = new Map<string, StateCounts>();

  static of(pairs: Iterable<SourcedPair>): RollupTally {
    const tally = new RollupTally();
    for (const pair of pairs) tally.add(pair);
    return tally;
  }

  add(pair: SourcedPair): void {
    this.apply(pair, 1);
  }

  /** Takes away a pair added before, as it was added. */
  remove(pair: SourcedPair): void {
    this.apply(pair, -1);
  }

  clear(): void {
    this.types.clear();
    this.extensions.clear();
    this.maintained.clear();
    this.planned.clear();
    this.registered.clear();
  }

  /** The pairs as the evaluation reads them: fresh lists, so the caller may keep them as the tally moves on. */
  sorted(): SortedPairs {
    const buckets = new Map<string, TypeBucket>();
    for (const [type, { notHealthy }] of this.types)
      buckets.set(type, {
        unevaluable: [...notHealthy.unevaluable.values()],
        failing: [...notHealthy.failing.values()],
        progressing: [...notHealthy.progressing.values()],
      });
    const counts = new Map<string, ExtensionCounts>();
    for (const [name, e] of this.extensions)
      counts.set(name, { name, conditionType: mostCarried(e.conditionTypes), ...e.counts });
    return { buckets, counts, maintained: this.maintained.size, planned: this.planned.size };
  }

  /** The counts of an extension's pairs that a SystemExtension registered; undefined when there are none. */
  registeredCounts(extension: string): Readonly<StateCounts> | undefined {
    return this.registered.get(extension);
  }

  private apply(pair: SourcedPair, delta: 1 | -1): void {
    this.applyType(pair, delta);
    const field = COUNT_FIELD[pair.state];
    let e = this.extensions.get(pair.extension);
    if (!e) {
      e = { counts: zero(), conditionTypes: new Map() };
      this.extensions.set(pair.extension, e);
    }
    e.counts[field] += delta;
    bump(e.conditionTypes, pair.conditionType, delta);
    if (e.conditionTypes.size === 0) this.extensions.delete(pair.extension);
    if (pair.maintenance) bump(this.maintained, pair.node, delta);
    if (pair.maintenancePlanned) bump(this.planned, pair.node, delta);
    if (pair.source === 'systemExtension') {
      let r = this.registered.get(pair.extension);
      if (!r) {
        r = { ...zero(), nodes: 0 };
        this.registered.set(pair.extension, r);
      }
      r[field] += delta;
      r.nodes += delta;
      if (r.nodes === 0) this.registered.delete(pair.extension);
    }
  }

  private applyType(pair: SourcedPair, delta: 1 | -1): void {
    let t = this.types.get(pair.conditionType);
    if (!t) {
      t = { pairs: 0, notHealthy: { unevaluable: new Map(), failing: new Map(), progressing: new Map() } };
      this.types.set(pair.conditionType, t);
    }
    t.pairs += delta;
    const verdict = classifyPair(pair);
    if (verdict !== 'healthy') {
      const key = pairKey(pair);
      if (delta > 0) t.notHealthy[verdict].set(key, pair);
      else t.notHealthy[verdict].delete(key);
    }
    if (t.pairs === 0) this.types.delete(pair.conditionType);
  }
}

/** Adds `delta` to a key's count, forgetting the key at zero. */
function bump(counts: Map<string, number>, key: string, delta: number): void {
  const n = (counts.get(key) ?? 0) + delta;
  if (n === 0) counts.delete(key);
  else counts.set(key, n);
}

/** The key counted most, the first by name on a tie ('' for none). */
function mostCarried(counts: ReadonlyMap<string, number>): string {
  let best = '';
  let most = 0;
  for (const [key, n] of counts)
    if (n > most || (n === most && key < best)) {
      best = key;
      most = n;
    }
  return best;
}
