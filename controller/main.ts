#!/usr/bin/env node
// nodecare-controller entry point: only composition (STYLE.md 14). Config is validated before any I/O.

import { Registry } from 'prom-client';
import { systemClock } from '../lib/clock.ts';
import { KubeClient } from '../lib/kube/client.ts';
import { loadConnection } from '../lib/kube/config.ts';
import { createLogger } from '../lib/log.ts';
import { OptionsError } from '../lib/options.ts';
import { loadControllerConfig } from './config.ts';
import { alwaysLeader, runController, type Elector } from './controller.ts';
import { KubeLeaderLeaseStore, LeaderElector } from './leader.ts';

const SHUTDOWN_DEADLINE_MS = 5_000;

async function main(): Promise<number> {
  let loaded;
  try {
    loaded = loadControllerConfig(process.argv.slice(2), process.env);
  } catch (err) {
    if (err instanceof OptionsError) {
      process.stderr.write(
        `nodecare-controller: ${err.message}\nRun nodecare-controller --help for the options.\n`,
      );
      return 2;
    }
    throw err;
  }
  if ('help' in loaded) {
    process.stdout.write(`${loaded.help}\n`);
    return 0;
  }
  const { config } = loaded;
  const log = createLogger({ name: 'nodecare-controller', level: config.logLevel });
  const connection = await loadConnection(config.kubeconfig);
  const client = new KubeClient(connection, {
    userAgent: `nodecare-controller/${config.identity}`,
    connections: 32,
  });
  const { namespace, name, leaseDurationMs, renewDeadlineMs, retryPeriodMs } = config.leaderElection;
  const elector: Elector = config.leaderElect
    ? new LeaderElector({
        store: new KubeLeaderLeaseStore(client),
        clock: systemClock,
        log: log.child({ component: 'leader-election' }),
        identity: config.identity,
        name,
        namespace,
        leaseDurationMs,
        renewDeadlineMs,
        retryPeriodMs,
      })
    : alwaysLeader;
  const controller = await runController(config, {
    clock: systemClock,
    log,
    registry: new Registry(),
    client,
    elector,
  });
  await new Promise<void>((resolve) => {
    const onSignal = (signal: string): void => {
      log.info({ signal }, 'Stopping');
      setTimeout(() => process.exit(0), SHUTDOWN_DEADLINE_MS).unref();
      void controller.stop().then(resolve);
    };
    process.once('SIGTERM', onSignal);
    process.once('SIGINT', onSignal);
  });
  await client.close();
  log.flush();
  return 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`nodecare-controller: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
