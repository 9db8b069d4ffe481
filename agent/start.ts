// nodecare-agent entry point: only composition (docs/conventions.md 14). Config is validated before any I/O.

import { missingRuntimeFlags, runtimeFlagsProblem } from './runtime-flags.ts';
import { systemClock } from '../lib/clock.ts';
import { KubeClient } from '../lib/kube/client.ts';
import { loadConnection } from '../lib/kube/config.ts';
import { createLogger } from '../lib/log.ts';
import { runProgram } from '../lib/program.ts';
import { Registry } from '../lib/prom.ts';
import { runAgent } from './agent.ts';
import { loadAgentConfig, type AgentConfig } from './config.ts';

runProgram<AgentConfig>({
  name: 'nodecare-agent',
  load: loadAgentConfig,
  shutdownDeadlineMs: 4_000,
  async start(config) {
    const log = createLogger({ name: 'nodecare-agent', level: config.logLevel, format: config.logFormat });
    if (runtimeFlagsProblem !== undefined)
      log.warn(
        { flags: missingRuntimeFlags, problem: runtimeFlagsProblem },
        'Running without the runtime flags: re-executing with them would fail',
      );
    const client = new KubeClient(await loadConnection(config.kubeconfig), {
      userAgent: `nodecare-agent/${config.nodeName}`,
      connections: 8,
      // node:https with a pool of its own: undici would cost the agent ~10 MiB (docs/adr/0006).
      transport: 'node',
    });
    const agent = await runAgent(config, { clock: systemClock, log, registry: new Registry(), client });
    return {
      async stop() {
        log.info('Stopping');
        await agent.stop();
        await client.close();
        log.flush();
      },
    };
  },
});
