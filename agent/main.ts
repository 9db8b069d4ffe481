#!/usr/bin/env node
// nodecare-agent entry point: only composition (STYLE.md 14). Config is validated before any I/O.

import { Registry } from 'prom-client';
import { systemClock } from '../lib/clock.ts';
import { loadConnection } from '../lib/kube/config.ts';
import { KubeClient } from '../lib/kube/client.ts';
import { createLogger } from '../lib/log.ts';
import { OptionsError } from '../lib/options.ts';
import { runAgent } from './agent.ts';
import { loadAgentConfig } from './config.ts';

const SHUTDOWN_DEADLINE_MS = 4_000;

async function main(): Promise<number> {
  let loaded;
  try {
    loaded = loadAgentConfig(process.argv.slice(2), process.env);
  } catch (err) {
    if (err instanceof OptionsError) {
      process.stderr.write(`nodecare-agent: ${err.message}\nRun nodecare-agent --help for the options.\n`);
      return 2;
    }
    throw err;
  }
  if ('help' in loaded) {
    process.stdout.write(`${loaded.help}\n`);
    return 0;
  }
  const { config } = loaded;
  const log = createLogger({ name: 'nodecare-agent', level: config.logLevel });
  const connection = await loadConnection(config.kubeconfig);
  const client = new KubeClient(connection, {
    userAgent: `nodecare-agent/${config.nodeName}`,
    connections: 8,
  });
  const agent = await runAgent(config, { clock: systemClock, log, registry: new Registry(), client });
  await new Promise<void>((resolve) => {
    const onSignal = (signal: string): void => {
      log.info({ signal }, 'Stopping');
      setTimeout(() => process.exit(0), SHUTDOWN_DEADLINE_MS).unref();
      void agent.stop().then(resolve);
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
    process.stderr.write(`nodecare-agent: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
