// The shape of one entry in the probe kinds' table (probe-kinds.ts): what every kind says about itself (its
// docs line, defaults, parsing, description) and what it may add (annotation rules, the hosts and paths it
// reaches, what the agent must watch for it).

import type { Defaults, FieldReader } from './field-reader.ts';
import type { ProbeKind, ProbeOf } from './probe-spec.ts';

/** Objects the agent watches only while a probe needs them (its own Node and the SystemExtensions always). */
export type ProbeWatch = 'pods' | 'resourceSlices';

/** Where a probe points: a host (judged against loopback and the node's addresses) or a path (allowed dirs). */
export type ProbeTarget = { field: string; host: string } | { field: string; path: string };

export interface ProbeKindEntry<K extends ProbeKind> {
  /** What Healthy means for this kind: the docs/design.md table's line. */
  healthyWhen: string;
  /** The defaults of its optional fields, in input form (the CRD schema's `default`s say the same). */
  defaults?: Defaults;
  /**
   * Reads and validates the kind's fields, with `defaults` already filled in; undefined (with problems
   * recorded on `r`) when they are wrong.
   */
  parse(r: FieldReader): ProbeOf<K> | undefined;
  /** One line for people (`kubectl nodecare explain`). */
  describe(probe: ProbeOf<K>): string;
  /** What a node annotation may not ask of this kind (docs/design.md section 3); none when absent. */
  annotationForbids?(probe: ProbeOf<K>): string[];
  /** The hosts and paths the probe reaches; an annotation's probe is held to the node's own (registration.ts). */
  targets?(probe: ProbeOf<K>): ProbeTarget[];
  /** What the agent must watch, besides its own Node, for this kind to be judged; nothing when absent. */
  watches?: ProbeWatch;
}
