// The options every nodecare program shares, defined once so that the agent and the controller take them
// the same way (flags, defaults, help text).

import { LOG_FORMATS, LOG_LEVELS } from './log.ts';
import type { OptionTable } from './options.ts';

export const COMMON_OPTIONS = {
  kubeconfig: {
    type: 'string',
    description:
      'Path to a kubeconfig (else the files in $KUBECONFIG, merged as kubectl merges them, else ~/.kube/config if it exists, else the in-cluster config).',
  },
  'health-address': {
    type: 'string',
    description:
      'Address the health and metrics server binds to: loopback by default (under host networking any other address is reachable from outside the node); give the pod IP to let Prometheus scrape it.',
    default: '127.0.0.1',
  },
  'log-level': { type: 'string', description: 'Log level.', default: 'info', choices: LOG_LEVELS },
  'log-format': {
    type: 'string',
    description: 'Log format: json (one object per line, for log pipelines) or text (for people).',
    default: 'json',
    choices: LOG_FORMATS,
  },
} satisfies OptionTable;
