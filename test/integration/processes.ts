// Runs nodecare programs as real local processes (one agent per simulated node), the way they run in a
// cluster, and collects their JSON logs.

import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { duplicateKeys } from '../../lib/testing.ts';

const ROOT = join(import.meta.dirname, '..', '..');

export interface LogLine {
  level: string;
  msg: string;
  [key: string]: unknown;
}

export interface ProgramProcess {
  child: ChildProcess;
  logs: LogLine[];
  /** JSON log lines that repeat a key (a log pipeline would keep only one of the values). */
  duplicateKeyLines: string[];
  stderr: string[];
  exited: Promise<number | null>;
  /** Resolves with the first log line matching `msg` (waits up to timeoutMs). */
  waitForLog(msg: string, timeoutMs?: number): Promise<LogLine>;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves with the exit code. */
  stop(graceMs?: number): Promise<number | null>;
  kill(): Promise<void>;
}

export function startProgram(
  entry: 'agent' | 'controller',
  args: string[],
  env: Record<string, string> = {},
): ProgramProcess {
  const child = spawn(process.execPath, [join(ROOT, entry, 'main.ts'), ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: LogLine[] = [];
  const duplicateKeyLines: string[] = [];
  const stderr: string[] = [];
  const waiters: Array<{ msg: string; resolve: (line: LogLine) => void }> = [];
  createInterface({ input: child.stdout! }).on('line', (text) => {
    let line: LogLine;
    try {
      line = JSON.parse(text) as LogLine;
    } catch {
      line = { level: 'raw', msg: text };
    }
    logs.push(line);
    if (line.level !== 'raw' && duplicateKeys(text).length > 0) duplicateKeyLines.push(text);
    for (const waiter of [...waiters]) {
      if (line.msg === waiter.msg) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(line);
      }
    }
  });
  createInterface({ input: child.stderr! }).on('line', (text) => stderr.push(text));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    logs,
    duplicateKeyLines,
    stderr,
    exited,
    waitForLog(msg, timeoutMs = 30_000) {
      const seen = logs.find((l) => l.msg === msg);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`no log "${msg}" within ${timeoutMs} ms; stderr: ${stderr.join('\n')}`)),
          timeoutMs,
        );
        waiters.push({
          msg,
          resolve: (line) => {
            clearTimeout(timer);
            resolve(line);
          },
        });
        void exited.then((code) =>
          reject(new Error(`process exited (${code}) before logging "${msg}"; stderr: ${stderr.join('\n')}`)),
        );
      });
    },
    async stop(graceMs = 10_000) {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
    async kill() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGKILL');
      await exited;
    },
  };
}

export interface AgentOptions {
  kubeconfig: string;
  nodeName: string;
  allowedPaths?: string[];
  extraArgs?: string[];
}

/** Starts nodecare-agent for one simulated node and waits until it serves health. */
export async function startAgent(options: AgentOptions): Promise<ProgramProcess & { healthPort: number }> {
  const args = [
    `--kubeconfig=${options.kubeconfig}`,
    `--node-name=${options.nodeName}`,
    '--health-port=0',
    '--health-address=127.0.0.1',
    '--log-level=debug',
    ...(options.allowedPaths ?? []).map((p) => `--allowed-path=${p}`),
    ...(options.extraArgs ?? []),
  ];
  const agent = startProgram('agent', args, { POD_NAME: `nodecare-agent-${options.nodeName}` });
  const started = await agent.waitForLog('Started nodecare-agent');
  return Object.assign(agent, { healthPort: started.port as number });
}
