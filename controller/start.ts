// nodecare-controller entry point: only composition (docs/conventions.md 14). Config is validated before any I/O.

// First: V8's heap settings, before anything else loads (docs/adr/0007).
import { missingRuntimeFlags, optimizeForSize, runtimeFlagsProblem } from './runtime-flags.ts';
import { systemClock } from '../lib/clock.ts';
import { Registry } from '../lib/prom.ts';
import { KubeClient } from '../lib/kube/client.ts';
import { loadConnection } from '../lib/kube/config.ts';
import { createLogger } from '../lib/log.ts';
import { runProgram } from '../lib/program.ts';
import { loadControllerConfig, type ControllerConfig } from './config.ts';
import { alwaysLeader, runController, type Elector } from './controller.ts';
import { KubeLeaseStore } from '../lib/kube/leases.ts';
import { LeaderElector } from '../lib/leader/elector.ts';

/** Kept of the shutdown budget for closing the client's connections after the controller stopped. */
const CLIENT_CLOSE_MS = 250;

runProgram<ControllerConfig>({
  name: 'nodecare-controller',
  load: loadControllerConfig,
  // Longer than one request (--request-timeout-seconds bounds each, but stop() cuts in-flight work off at
  // its own deadline anyway) and short of the kubelet's default 30 s grace; stop() releases the leader lease
  // within it.
  shutdownDeadlineMs: 10_000,
  async start(config) {
    const log = createLogger({
      name: 'nodecare-controller',
      level: config.logLevel,
      format: config.logFormat,
    });
    if (runtimeFlagsProblem !== undefined)
      log.warn(
        { flags: missingRuntimeFlags, problem: runtimeFlagsProblem },
        'Running without the runtime flags: re-executing with them would fail',
      );
    const client = new KubeClient(await loadConnection(config.kubeconfig), {
      userAgent: `nodecare-controller/${config.identity}`,
      connections: 32,
    });
    const { namespace, name, leaseDurationMs, renewDeadlineMs, retryPeriodMs } = config.leaderElection;
    const elector: Elector = config.leaderElect
      ? new LeaderElector({
          store: new KubeLeaseStore(client),
          clock: systemClock,
          log: log.child({ component: 'leader-election' }),
          identity: config.identity,
          name,
          namespace,
          leaseDurationMs,
          renewDeadlineMs,
          retryPeriodMs,
        })
      : alwaysLeader();
    const controller = await runController(config, {
      clock: systemClock,
      log,
      registry: new Registry(),
      client,
      elector,
      settled: optimizeForSize,
    });
    return {
      async stop(budgetMs) {
        log.info('Stopping');
        await controller.stop(budgetMs - CLIENT_CLOSE_MS);
        await client.close();
        log.flush();
      },
    };
  },
});
