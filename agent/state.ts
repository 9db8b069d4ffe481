// The agent's per-extension threshold state machine (docs/design.md section 4, docs/conventions.md 4): a pure function from the
// previous machine, one probe result, the time and the spec's thresholds to the next machine and the record
// the extension's Lease publishes. Results are counted as consecutive runs, as the kubelet's prober worker
// counts them, so a single result of the other kind restarts the count (that is how "a result of the
// published kind resets the opposite counter" holds).
//
// Rules for one result, in order:
//   Healthy      published Healthy → refresh reason/message; else Healthy after successThreshold in a row.
//   Unknown with reason InvalidRegistration → Unknown at once (waiting never fixes a registration).
//   Unhealthy / Unknown ("failing" results):
//     - inside the startup grace (now < graceStartMs + startupGraceSeconds, and the extension has not been
//       Healthy since graceStartMs) → Progressing / StartupGrace at once, with the underlying reason and
//       message in the message: the state does not flip, and the operator learns why it is not ready yet;
//     - from Healthy or Progressing → that state after failureThreshold failing results in a row, in any mix
//       of Unhealthy and Unknown, published as the latest result's kind (an extension that alternates
//       between "refused" and "could not tell" must not stay Healthy);
//     - already published as that state → refresh reason/message;
//     - between Unhealthy and Unknown → after failureThreshold results of the new kind in a row.
// Unknown counts as failing inside the grace too: during start-up "could not determine" (a socket not yet
// readable) is as expected as a refused connection. `since` moves only when the state changes; a change of
// reason or message alone is still a change the caller must write.

import type { ExtensionSpec } from '../api/extension.ts';
import type { ProbeStateRecord } from '../api/lease.ts';
import { ExtensionState } from '../api/names.ts';
import { ProbeReason } from '../api/reasons.ts';
import type { ProbeOutcome, ProbeResult } from './probes/index.ts';

export type Thresholds = Pick<ExtensionSpec, 'failureThreshold' | 'successThreshold' | 'startupGraceSeconds'>;

export interface ExtensionMachine {
  /** What the extension's Lease carries. */
  readonly published: ProbeStateRecord;
  /** The latest result's outcome and how many results in a row had it (the kubelet's resultRun). */
  readonly lastOutcome: ProbeOutcome | undefined;
  readonly outcomeRun: number;
  /** Results in a row that were not Healthy (Unhealthy and Unknown in any mix). */
  readonly failingRun: number;
  /** The grace start this machine last saw; a different one re-opens the grace unless Healthy now. */
  readonly graceStartMs: number;
  /** Whether the published state was Healthy at some point since graceStartMs (which ends the grace). */
  readonly healthySinceGraceStart: boolean;
}

export interface TransitionInput {
  result: ProbeResult;
  /** Wall clock at the result: the `since` written. */
  nowMs: number;
  /** Monotonic clock at the result (Clock.monotonic): the grace is measured on it (docs/adr/0020). */
  monotonicMs: number;
  spec: Thresholds;
  /** Registration time or node boot, whichever is later (the caller decides), on the monotonic clock. */
  graceStartMs: number;
}

export interface Transition {
  machine: ExtensionMachine;
  /** The record to publish (the same object as machine.published). */
  record: ProbeStateRecord;
  /** State, reason or message differ from before: the caller writes the Lease at once. */
  changed: boolean;
}

const AWAITING_FIRST_PROBE_MESSAGE = 'Waiting for the first probe result';

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** A new extension: Progressing / AwaitingFirstProbe since `nowMs`. */
export function initialMachine(nowMs: number, graceStartMs: number): ExtensionMachine {
  return {
    published: {
      state: ExtensionState.Progressing,
      reason: ProbeReason.AwaitingFirstProbe,
      message: AWAITING_FIRST_PROBE_MESSAGE,
      since: iso(nowMs),
    },
    lastOutcome: undefined,
    outcomeRun: 0,
    failingRun: 0,
    graceStartMs,
    healthySinceGraceStart: false,
  };
}

/** The record of a registration that does not parse or validate: Unknown / InvalidRegistration. */
export function invalidRegistration(problems: readonly string[], nowMs: number): ProbeStateRecord {
  return {
    state: ExtensionState.Unknown,
    reason: ProbeReason.InvalidRegistration,
    message: problems.length > 0 ? problems.join('; ') : 'invalid registration',
    since: iso(nowMs),
  };
}

type Target = Omit<ProbeStateRecord, 'since'> | undefined;

interface FailingStep {
  published: ProbeStateRecord;
  result: ProbeResult;
  state: typeof ExtensionState.Unhealthy | typeof ExtensionState.Unknown;
  outcomeRun: number;
  failingRun: number;
  inGrace: boolean;
  graceEndMs: number;
  failureThreshold: number;
}

function failingTarget(step: FailingStep): Target {
  const { published, result, state, failureThreshold } = step;
  const asResult = { state, reason: result.reason, message: result.message };
  if (state === ExtensionState.Unknown && result.reason === ProbeReason.InvalidRegistration) return asResult;
  if (step.inGrace) {
    return {
      state: ExtensionState.Progressing,
      reason: ProbeReason.StartupGrace,
      message: `${result.reason}: ${result.message} (startup grace until ${iso(step.graceEndMs)})`,
    };
  }
  switch (published.state) {
    case ExtensionState.Healthy:
    case ExtensionState.Progressing:
      return step.failingRun >= failureThreshold ? asResult : undefined;
    case ExtensionState.Unhealthy:
    case ExtensionState.Unknown:
      return published.state === state || step.outcomeRun >= failureThreshold ? asResult : undefined;
    default: {
      const unreachable: never = published.state;
      throw new Error(`unknown published state ${String(unreachable)}`);
    }
  }
}

/** Moves the machine by one probe result. Pure: the input machine is not modified. */
export function transition(machine: ExtensionMachine, input: TransitionInput): Transition {
  const { result, nowMs, monotonicMs, spec, graceStartMs } = input;
  const { published } = machine;
  const outcomeRun = machine.lastOutcome === result.outcome ? machine.outcomeRun + 1 : 1;
  const failingRun = result.outcome === 'Healthy' ? 0 : machine.failingRun + 1;
  const healthySinceGraceStart =
    published.state === ExtensionState.Healthy ||
    (machine.graceStartMs === graceStartMs && machine.healthySinceGraceStart);
  const graceEndMs = graceStartMs + spec.startupGraceSeconds * 1000;
  const inGrace = monotonicMs < graceEndMs && !healthySinceGraceStart;
  const failingStep = (state: FailingStep['state']): FailingStep => ({
    published,
    result,
    state,
    outcomeRun,
    failingRun,
    inGrace,
    // As wall time, for the message.
    graceEndMs: nowMs + (graceEndMs - monotonicMs),
    failureThreshold: spec.failureThreshold,
  });

  let target: Target;
  switch (result.outcome) {
    case 'Healthy':
      target =
        published.state === ExtensionState.Healthy || outcomeRun >= spec.successThreshold
          ? { state: ExtensionState.Healthy, reason: result.reason, message: result.message }
          : undefined;
      break;
    case 'Unhealthy':
      target = failingTarget(failingStep(ExtensionState.Unhealthy));
      break;
    case 'Unknown':
      target = failingTarget(failingStep(ExtensionState.Unknown));
      break;
    default: {
      const unreachable: never = result.outcome;
      throw new Error(`unknown probe outcome ${String(unreachable)}`);
    }
  }

  const changed =
    target !== undefined &&
    (target.state !== published.state ||
      target.reason !== published.reason ||
      target.message !== published.message);
  const record: ProbeStateRecord =
    target !== undefined && changed
      ? { ...target, since: target.state === published.state ? published.since : iso(nowMs) }
      : published;
  const next: ExtensionMachine = {
    published: record,
    lastOutcome: result.outcome,
    outcomeRun,
    failingRun,
    graceStartMs,
    healthySinceGraceStart: healthySinceGraceStart || record.state === ExtensionState.Healthy,
  };
  return { machine: next, record, changed };
}
