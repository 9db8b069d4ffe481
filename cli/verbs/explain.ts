// `kubectl nodecare explain <node>`: why this node is or is not schedulable, across every taint on it (not only
// nodecare's), then each required extension (registration source, lease state, reason, message, since, probe
// target, critical, DryRun) and what the controller will do next and when, computed with the controller's
// decision core (cli/model.ts). It reads that node and its Leases, not the whole cluster (cli/node-read.ts).
// The view is explain-view.ts, its text explain-text.ts. Exit 0 when pods can land and nodecare finds it
// healthy, 1 when not, 2 error.

import { isKubeError } from '../../lib/kube/errors.ts';
import type { OptionValues } from '../../lib/options.ts';
import type { CliIo, Verb } from '../verb.ts';
import { structured } from '../format.ts';
import type { NodeReport } from '../model.ts';
import { readNodeReport } from '../node-read.ts';
import { readNodeEvents, readNodeWorkloads, type NodeWorkloads } from '../snapshot.ts';
import { explainView } from './explain-view.ts';
import { renderExplainText } from './explain-text.ts';
import {
  CONNECTION_OPTIONS,
  Exit,
  kubectlArgs,
  OUTPUT_OPTION,
  outputOf,
  POLICY_OPTIONS,
  withClient,
} from './common.ts';

// The view and its text, which the tests import from here beside the verb.
export { explainView, type ExplainView } from './explain-view.ts';
export { renderExplainText } from './explain-text.ts';

export const EXPLAIN_OPTIONS = {
  node: { type: 'string', description: 'The node to explain (also the first argument).' },
  ...CONNECTION_OPTIONS,
  output: { ...OUTPUT_OPTION.output, description: 'Output format (-o): text, json or yaml (wide is text).' },
  events: {
    type: 'integer',
    description: 'How many of the most recent events regarding the node to show.',
    default: 10,
    min: 0,
    max: 1000,
  },
  ...POLICY_OPTIONS,
} as const;

/**
 * What keptOffByTaints needs, read only for a node that carries one of nodecare's taints. An answer the
 * credentials are refused (or any other API error) is reported on the page, never fails explain.
 */
async function readKeptOffInputs(
  client: Parameters<typeof readNodeWorkloads>[0],
  report: NodeReport,
): Promise<NodeWorkloads | { problem: string }> {
  const keys = [report.input.policy.bootstrapTaintKey, report.input.policy.runtimeTaintKey];
  const held = (report.raw.spec?.taints ?? []).some((t) => keys.includes(t.key) && t.effect === 'NoSchedule');
  if (!held) return { daemonSets: [], pods: [] };
  try {
    return await readNodeWorkloads(client, report.name);
  } catch (err) {
    if (!isKubeError(err)) throw err;
    return {
      problem: `listing DaemonSets and pods in all namespaces failed: ${err.message}; it needs list on daemonsets and pods`,
    };
  }
}

export const explainVerb: Verb = {
  summary:
    'Why the node is or is not schedulable (every taint, each required extension, what the controller does next); exit 0 schedulable and healthy, 1 not, 2 error.',
  usage: '<node> [options]',
  options: EXPLAIN_OPTIONS,
  normalizeArgs: (argv) => kubectlArgs(argv, 'node', undefined, EXPLAIN_OPTIONS),
  async run(values: OptionValues, io: CliIo): Promise<number> {
    const name = values.node as string | undefined;
    if (!name) {
      io.err('kubectl nodecare explain: name a node: kubectl nodecare explain <node>');
      return Exit.error;
    }
    return withClient('explain', values, io, async (client) => {
      const now = Date.now();
      const { report, tripped } = await readNodeReport(client, values, name, now);
      const [events, workloads] = await Promise.all([
        readNodeEvents(client, name),
        readKeptOffInputs(client, report),
      ]);
      const view = explainView(report, tripped, events, values.events as number, now, workloads);
      const format = outputOf(values);
      if (format === 'json' || format === 'yaml') io.out(structured(format, view));
      else for (const line of renderExplainText(view, now)) io.out(line);
      return view.schedulable && view.healthy ? Exit.healthy : Exit.notHealthy;
    });
  },
};
