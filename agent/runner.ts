// One extension on one node: the probe loop (with jitter), the threshold state machine (state.ts) and the
// Lease that carries the result. A change of state or reason is written at once; a message that changed alone
// waits until MESSAGE_REFRESH_MS after the last write, and an unchanged lease is renewed on its own, longer
// cadence. That keeps the write budget (docs/design.md P4) no matter how chatty a probe's messages are.

import type {
  DesiredLease,
  ExtensionSpec,
  NodeRef,
  ProbeSpec,
  ProbeStateRecord,
  Registration,
} from '../api/index.ts';
import { withNote } from '../api/lease.ts';
import { ProbeReason } from '../api/reasons.ts';
import { timeoutSignal, type Clock, type Timer } from '../lib/clock.ts';
import type { Logger } from '../lib/log.ts';
import type { LeaseWriter } from './leases/writer.ts';
import type { AgentMetrics } from './metrics.ts';
import { describeError, unknown } from './probes/index.ts';
import type { ProbeContext, ProbeEnvironment, ProbeResult } from './probes/index.ts';
import { initialMachine, invalidRegistration, transition, type ExtensionMachine } from './state.ts';

/** Where the runner's Lease goes: the node (for the owner reference), its boot and the holder identity. */
export interface LeaseTarget {
  node: NodeRef;
  bootId: string;
  holderIdentity: string;
}

export interface RunnerDeps {
  clock: Clock;
  log: Logger;
  writer: LeaseWriter;
  metrics: AgentMetrics;
  env: ProbeEnvironment;
  runProbe(spec: ProbeSpec, ctx: ProbeContext): Promise<ProbeResult>;
  target(): LeaseTarget | undefined;
  /** Renewal interval of an unchanged lease; the lease duration is three times this. */
  renewIntervalMs: number;
  random: () => number;
}

const JITTER = 0.1;

/**
 * A message that changed alone (a latency, a device count) is written this long after the last write at the
 * latest, however long the renewal interval: the renewal keeps the Lease alive, this keeps its words current.
 */
export const MESSAGE_REFRESH_MS = 120_000;

export class ExtensionRunner {
  readonly name: string;
  private readonly deps: RunnerDeps;
  private registration: Registration;
  private graceStartMs: number;
  private machine: ExtensionMachine;
  private probeTimer: Timer | undefined;
  private renewTimer: Timer | undefined;
  private readonly stopping = new AbortController();
  private lastWrittenMs = -Infinity;
  private lastWrittenRecord: ProbeStateRecord | undefined;
  private note: string | undefined;
  private lastWrittenTarget: LeaseTarget | undefined;
  private probing = false;
  /** A tick of a newer registration found a probe of the previous one running. */
  private probeWhenIdle = false;

  constructor(name: string, registration: Registration, graceStartMs: number, deps: RunnerDeps) {
    this.name = name;
    this.deps = deps;
    this.registration = registration;
    this.graceStartMs = graceStartMs;
    this.machine = initialMachine(deps.clock.now(), graceStartMs);
  }

  get record(): ProbeStateRecord {
    return this.machine.published;
  }

  get current(): Registration {
    return this.registration;
  }

  start(): void {
    this.begin();
  }

  /** A changed registration is a new registration: fresh state machine, fresh grace, probed at once. */
  update(registration: Registration, graceStartMs: number): void {
    this.registration = registration;
    this.graceStartMs = graceStartMs;
    this.machine = initialMachine(this.deps.clock.now(), graceStartMs);
    this.begin();
  }

  /** Writes at once if the lease's target (node uid, boot ID) changed since the last write. */
  republish(): void {
    this.publish();
  }

  /**
   * A note the Lease message carries after the probe's own (a registration conflict, issue 7 item 2). It is
   * not part of the registration (a note must not restart the state machine or its grace); a changed note is
   * written at once once the lease exists.
   */
  setNote(note: string | undefined): void {
    if (note === this.note) return;
    this.note = note;
    if (this.lastWrittenRecord) {
      this.lastWrittenRecord = undefined;
      this.publish();
    }
  }

  stop(): void {
    this.stopping.abort();
    this.probeTimer?.cancel();
    this.renewTimer?.cancel();
    this.deps.metrics.setState(this.name, undefined, false);
  }

  private begin(): void {
    const { clock, random } = this.deps;
    const reg = this.registration;
    this.probeTimer?.cancel();
    this.renewTimer?.cancel();
    if (!reg.valid) {
      this.machine = { ...this.machine, published: invalidRegistration(reg.problems, clock.now()) };
      this.deps.log.warn({ problems: reg.problems, source: reg.source }, 'Rejected invalid registration');
      this.publish();
    }
    // A valid registration publishes after its first probe (within about a second): an agent restarting on a
    // healthy node then rewrites Healthy over Healthy instead of flapping through AwaitingFirstProbe.
    this.renewLoop();
    // Spread first probes over up to a second so that many extensions do not fire together.
    if (reg.valid) this.scheduleProbe(random() * Math.min(1_000, reg.spec.periodSeconds * 1000));
  }

  private scheduleProbe(delayMs: number): void {
    if (this.stopping.signal.aborted) return;
    this.probeTimer = this.deps.clock.setTimer(delayMs, () => void this.tick());
  }

  /**
   * Renewal runs on its own timer, so a probe period longer than the renewal interval never lets the lease
   * lapse. It is due one interval after the last write (a state change in between moves it), not one
   * interval after the previous timer, which would let a renewal skipped as "not due yet" wait a second interval.
   */
  private renewLoop(): void {
    if (this.stopping.signal.aborted) return;
    const dueInMs = this.lastWrittenMs + this.deps.renewIntervalMs - this.deps.clock.monotonic();
    this.renewTimer = this.deps.clock.setTimer(dueInMs > 0 ? dueInMs : this.deps.renewIntervalMs, () => {
      this.publish();
      this.renewLoop();
    });
  }

  private async tick(): Promise<void> {
    const reg = this.registration;
    if (!reg.valid || this.stopping.signal.aborted) return;
    if (this.probing) {
      // Re-registered while the previous registration's probe runs: probe as soon as that one is done.
      this.probeWhenIdle = true;
      return;
    }
    this.probing = true;
    try {
      await this.probeOnce(reg.spec);
    } catch (err) {
      // A bug in one round must not leave the runner "probing" forever while renewals keep a stale state.
      this.deps.log.error({ err }, 'Probe round failed');
    } finally {
      this.probing = false;
      if (this.registration !== reg) {
        // Re-registered while probing: the new registration's loop owns the lease and the schedule.
        if (this.probeWhenIdle) this.scheduleProbe(0);
        this.probeWhenIdle = false;
      } else {
        const period = reg.spec.periodSeconds * 1000;
        this.scheduleProbe(period * (1 - JITTER + 2 * JITTER * this.deps.random()));
      }
    }
  }

  /** One probe, its transition and the write it calls for; a result of a replaced registration is dropped. */
  private async probeOnce(spec: ExtensionSpec): Promise<void> {
    const { clock, metrics } = this.deps;
    const reg = this.registration;
    const timeoutMs = spec.timeoutSeconds * 1000;
    const started = performance.now();
    const signal = AbortSignal.any([timeoutSignal(timeoutMs), this.stopping.signal]);
    const result = await this.deps
      .runProbe(spec.probe, { signal, timeoutMs, now: () => clock.now(), env: this.deps.env })
      .catch((err: unknown) => unknown(ProbeReason.ProbeError, `probe failed: ${describeError(err)}`));
    if (this.stopping.signal.aborted) return; // stopping is not a failure: publish nothing
    if (this.registration !== reg) return;
    metrics.probeDuration.observe({ kind: spec.probe.kind }, (performance.now() - started) / 1000);
    metrics.probeResults.inc({ kind: spec.probe.kind, outcome: result.outcome });
    const step = transition(this.machine, {
      result,
      nowMs: clock.now(),
      monotonicMs: clock.monotonic(),
      spec,
      graceStartMs: this.graceStartMs,
    });
    this.machine = step.machine;
    if (step.changed && step.record.state !== this.lastWrittenRecord?.state) {
      this.deps.log.info(
        { state: step.record.state, reason: step.record.reason, detail: step.record.message },
        'Extension state changed',
      );
    }
    this.publish();
  }

  /**
   * Writes the lease when state or reason changed, when the lease's node or boot changed (a lease of an
   * earlier boot or an earlier Node object holds the node until rewritten), when the message changed and
   * MESSAGE_REFRESH_MS passed since the last write, or when the renewal is due.
   */
  private publish(): void {
    const record = this.machine.published;
    const now = this.deps.clock.monotonic();
    const target = this.deps.target();
    if (!target) return; // node not observed yet; the agent republishes once it is
    const last = this.lastWrittenRecord;
    const lastTarget = this.lastWrittenTarget;
    const urgent =
      !last ||
      last.state !== record.state ||
      last.reason !== record.reason ||
      lastTarget?.bootId !== target.bootId ||
      lastTarget.node.uid !== target.node.uid;
    const dueAfterMs =
      last && last.message !== record.message
        ? Math.min(MESSAGE_REFRESH_MS, this.deps.renewIntervalMs)
        : this.deps.renewIntervalMs;
    if (!urgent && now - this.lastWrittenMs < dueAfterMs) return;
    this.lastWrittenMs = now;
    this.lastWrittenRecord = record;
    this.lastWrittenTarget = target;
    this.deps.metrics.setState(this.name, record.state, this.registration.source !== 'annotation');
    const desired: DesiredLease = {
      node: target.node,
      extension: this.name,
      holderIdentity: target.holderIdentity,
      leaseDurationSeconds: Math.ceil((this.deps.renewIntervalMs * 3) / 1000),
      renewTime: new Date(this.deps.clock.now()),
      bootId: target.bootId,
      record: this.note === undefined ? record : withNote(record, this.note),
    };
    void this.deps.writer.write(desired);
  }
}
