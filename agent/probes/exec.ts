// exec probe (docs/design.md section 3): runs argv without a shell. Exit 0 is Healthy, exit 1 Unhealthy (CommandFailed), any
// other code, a signal, a spawn failure or the deadline is Unknown (CommandError). The first line of stdout,
// capped, is the message. The command runs in its own process group, and on the deadline the whole group is
// killed, so a script's children do not outlive the probe. stdout beyond 4 KiB is drained and dropped (not
// closed, which would turn a chatty but healthy command into a SIGPIPE failure); stderr is ignored.

import { spawn } from 'node:child_process';
import { ProbeReason } from '../../api/reasons.ts';
import { describeError, errorCode, formatSeconds, healthy, unhealthy, unknown } from './result.ts';
import type { Probe, ProbeResult } from './types.ts';

export const MAX_STDOUT_BYTES = 4 * 1024;

export const execProbe: Probe<'exec'> = (spec, ctx) =>
  new Promise<ProbeResult>((resolve) => {
    const [file, ...args] = spec.command as [string, ...string[]];
    if (ctx.signal.aborted) return resolve(timedOut(ctx.timeoutMs));
    const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'ignore'], detached: true, cwd: '/' });
    const stdout: Buffer[] = [];
    let stdoutBytes = 0;
    child.stdout.on('data', (chunk: Buffer) => {
      if (stdoutBytes < MAX_STDOUT_BYTES) stdout.push(chunk.subarray(0, MAX_STDOUT_BYTES - stdoutBytes));
      stdoutBytes += chunk.length;
    });
    const finish = (result: ProbeResult): void => {
      ctx.signal.removeEventListener('abort', onAbort);
      resolve(result);
    };
    const onAbort = (): void => {
      killGroup(child.pid);
      // A command that exited but left children holding stdout open still has its exit code.
      const exited = child.exitCode !== null || child.signalCode !== null;
      finish(exited ? judge(child.exitCode, child.signalCode, stdout) : timedOut(ctx.timeoutMs));
    };
    ctx.signal.addEventListener('abort', onAbort, { once: true });
    child.once('error', (err) => finish(spawnError(file, err)));
    child.once('close', (code, signal) => finish(judge(code, signal, stdout)));
  });

function judge(code: number | null, signal: NodeJS.Signals | null, stdout: Buffer[]): ProbeResult {
  const line = firstLine(stdout);
  if (code === 0) return healthy(line || 'exit 0');
  const detail = signal ? `killed by ${signal}` : `exit ${code}`;
  const message = line ? `${detail}: ${line}` : detail;
  return code === 1
    ? unhealthy(ProbeReason.CommandFailed, message)
    : unknown(ProbeReason.CommandError, message);
}

function firstLine(stdout: Buffer[]): string {
  return (Buffer.concat(stdout).toString('utf8').split(/\r?\n/, 1)[0] ?? '').trim();
}

function timedOut(timeoutMs: number): ProbeResult {
  return unknown(ProbeReason.CommandError, `timed out after ${formatSeconds(timeoutMs)}, killed`);
}

function spawnError(file: string, err: Error): ProbeResult {
  const code = errorCode(err);
  if (code === 'EACCES') return unknown(ProbeReason.PermissionDenied, `cannot execute ${file}: EACCES`);
  if (code === 'ENOENT') return unknown(ProbeReason.CommandError, `${file} not found`);
  return unknown(ProbeReason.CommandError, `cannot execute ${file}: ${describeError(err)}`);
}

/** Kills the command's process group (it leads one, being spawned detached). */
function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // The group is already gone.
  }
}
