// `kubectl nodecare extensions`: every SystemExtension and every annotation-registered extension in the
// cluster, with how many nodes require it and how many are in each state (as the controller decides them).
// Exit 0 when no extension fails anywhere, 1 when one does, 2 error.

import { parseSystemExtension } from '../../api/index.ts';
import { ExtensionState } from '../../api/names.ts';
import type { OptionValues } from '../../lib/options.ts';
import type { CliIo, Verb } from '../verb.ts';
import { structured, table } from '../format.ts';
import type { Analysis, ClusterSnapshot } from '../model.ts';
import {
  CONNECTION_OPTIONS,
  Exit,
  kubectlArgs,
  OUTPUT_OPTION,
  outputOf,
  POLICY_OPTIONS,
  readAnalysis,
  withClient,
} from './common.ts';

export const EXTENSIONS_OPTIONS = { ...CONNECTION_OPTIONS, ...OUTPUT_OPTION, ...POLICY_OPTIONS } as const;

export interface ExtensionRow {
  name: string;
  /** Where nodes get it from: a SystemExtension object, node annotations, or both (on different nodes). */
  sources: Array<'SystemExtension' | 'annotation'>;
  /** For a SystemExtension: whether its spec is valid, with the problems if not. */
  invalid?: string[];
  nodes: number;
  healthy: number;
  progressing: number;
  unhealthy: number;
  unknown: number;
  critical: boolean;
  enforcement: string;
  conditionType: string;
  breakerTripped: boolean;
}

export function extensionRows(snapshot: ClusterSnapshot, analysis: Analysis): ExtensionRow[] {
  const rows = new Map<string, ExtensionRow>();
  const row = (name: string): ExtensionRow => {
    let r = rows.get(name);
    if (!r) {
      r = {
        name,
        sources: [],
        nodes: 0,
        healthy: 0,
        progressing: 0,
        unhealthy: 0,
        unknown: 0,
        critical: true,
        enforcement: 'Enforce',
        conditionType: 'EveryNodeReady',
        breakerTripped: analysis.tripped.has(name),
      };
      rows.set(name, r);
    }
    return r;
  };
  for (const raw of snapshot.systemExtensions) {
    const sx = parseSystemExtension(raw);
    const r = row(sx.name);
    r.sources.push('SystemExtension');
    r.critical = sx.parse.policy.critical;
    r.enforcement = sx.parse.policy.enforcement;
    r.conditionType = sx.parse.policy.conditionType;
    const problems = [...sx.selectorProblems, ...(sx.parse.result.ok ? [] : sx.parse.result.problems)];
    if (problems.length > 0) r.invalid = problems;
  }
  for (const report of analysis.nodes) {
    for (const v of report.decision.extensions) {
      const r = row(v.name);
      const registration = report.registrations.get(v.name);
      if (registration?.source === 'annotation' && !r.sources.includes('annotation')) {
        r.sources.push('annotation');
        if (!r.sources.includes('SystemExtension')) {
          r.critical = registration.policy.critical;
          r.enforcement = registration.policy.enforcement;
          r.conditionType = registration.policy.conditionType;
        }
      }
      r.nodes++;
      switch (v.state) {
        case ExtensionState.Healthy:
          r.healthy++;
          break;
        case ExtensionState.Progressing:
          r.progressing++;
          break;
        case ExtensionState.Unhealthy:
          r.unhealthy++;
          break;
        case ExtensionState.Unknown:
          r.unknown++;
          break;
        default: {
          const unreachable: never = v.state;
          throw new Error(`unknown state ${String(unreachable)}`);
        }
      }
    }
  }
  return [...rows.values()].sort(
    (a, b) =>
      b.unhealthy + b.unknown - (a.unhealthy + a.unknown) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0),
  );
}

export function renderExtensionsText(rows: readonly ExtensionRow[], wide: boolean): string[] {
  if (rows.length === 0) {
    return ['No extensions registered (no SystemExtension, no extensions.nodecare.io/ node annotation).'];
  }
  const header = [
    'NAME',
    'SOURCE',
    'NODES',
    'HEALTHY',
    'PROGRESSING',
    'UNHEALTHY',
    'UNKNOWN',
    'CRITICAL',
    'ENFORCEMENT',
  ];
  if (wide) header.push('CONDITION TYPE', 'BREAKER');
  const lines = table(
    header,
    rows.map((r) => {
      const cells = [
        r.name,
        r.sources.join('+') + (r.invalid ? ' (invalid)' : ''),
        String(r.nodes),
        String(r.healthy),
        String(r.progressing),
        String(r.unhealthy),
        String(r.unknown),
        r.critical ? 'yes' : 'no',
        r.enforcement,
      ];
      if (wide) cells.push(r.conditionType, r.breakerTripped ? 'tripped' : '-');
      return cells;
    }),
  );
  for (const r of rows) {
    if (r.breakerTripped && !wide) {
      lines.push(
        `Breaker tripped for ${r.name}: its runtime taints are held back (a faulty rollout, not faulty nodes).`,
      );
    }
    for (const p of r.invalid ?? []) lines.push(`SystemExtension ${r.name} is invalid: ${p}`);
  }
  return lines;
}

export const extensionsVerb: Verb = {
  summary:
    'Every SystemExtension and annotation-registered extension with node counts per state; exit 0 none failing, 1 some failing, 2 error.',
  options: EXTENSIONS_OPTIONS,
  normalizeArgs: (argv) => kubectlArgs(argv),
  run(values: OptionValues, io: CliIo): Promise<number> {
    return withClient('extensions', values, io, async (client) => {
      const { snapshot, notes, analysis } = await readAnalysis(client, values);
      const rows = extensionRows(snapshot, analysis);
      const format = outputOf(values);
      if (format === 'json' || format === 'yaml') {
        io.out(structured(format, { kind: 'NodecareExtensions', extensions: rows }));
      } else {
        for (const line of renderExtensionsText(rows, format === 'wide')) io.out(line);
        for (const note of notes.missing) io.out(`Note: ${note}.`);
      }
      const failing = rows.some((r) => r.unhealthy + r.unknown > 0 || r.invalid);
      return failing ? Exit.notHealthy : Exit.healthy;
    });
  },
};
