// Release overrides (docs/operations.md, "Release a held node"): the one safe way to let pods onto a node
// nodecare holds, without taking the taint off by hand. A person writes the annotation
// nodecare.io/release-until (an RFC 3339 time at most 24 hours ahead) and optionally nodecare.io/release-reason;
// the controller, which owns the taints, lifts them until that time and then decides the node as usual again.
// Pure. The RELEASE table:
//
// | annotation                         | verdict | taints                         | events (once per value)       |
// | ---------------------------------- | ------- | ------------------------------ | ----------------------------- |
// | absent                             | —       | as decided                     | —                             |
// | a time ahead, within 24 h          | active  | none added, both removed       | Normal ReleaseStarted         |
// | a time reached or past             | expired | as decided (so they come back) | Normal ReleaseEnded           |
// | not RFC 3339, or more than 24 h on | invalid | as decided (nothing lifted)    | Warning ReleaseInvalid        |
//
// While active: the condition's message starts with the release; a bootstrap does not complete because of it
// (the bootstrapped marker is written only when the decision would lift the taint anyway), so at the expiry
// the bootstrap taint comes back while the bootstrap has not completed; the decision's next deadline is the
// expiry. A suspension still holds every taint change (suspend.ts applies after this).

import { MAX_RELEASE_SECONDS, NodeOverrideAnnotation } from '../../api/names.ts';
import { EventReason } from '../../api/reasons.ts';
import { capInput } from '../../api/text.ts';
import { MAX_CONDITION_MESSAGE } from './condition.ts';
import { taintChanges } from './suspend.ts';
import type { DecisionInput, NodeDecision, NodeEvent, NodeRelease } from './types.ts';

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/** The node's release override judged at `now` (wall ms); undefined when the node carries none. */
export function judgeRelease(
  annotations: Readonly<Record<string, string>>,
  now: number,
): NodeRelease | undefined {
  const raw = annotations[NodeOverrideAnnotation.releaseUntil];
  if (raw === undefined) return undefined;
  const until = capInput(raw.trim(), 64);
  const reason = capInput(annotations[NodeOverrideAnnotation.releaseReason] ?? '', 256);
  const ms = RFC3339.test(until) ? Date.parse(until) : NaN;
  const invalid = (problem: string): NodeRelease => ({
    verdict: 'invalid',
    until,
    reason,
    problem,
    lifted: [],
  });
  if (!Number.isFinite(ms)) return invalid(`not an RFC 3339 time (for example 2026-12-02T18:00:00Z)`);
  if (ms - now > MAX_RELEASE_SECONDS * 1000) {
    return invalid(`more than ${MAX_RELEASE_SECONDS / 3600} hours ahead`);
  }
  return { verdict: ms > now ? 'active' : 'expired', until, reason, lifted: [] };
}

/** `release until 2026-12-02T18:00:00Z (replacing the GPU driver by hand)` */
export function describeRelease(r: NodeRelease): string {
  return `release until ${r.until}${r.reason ? ` (${r.reason})` : ''}`;
}

/** The wall time an active release ends at, in ms. */
function untilMs(r: NodeRelease): number {
  return Date.parse(r.until);
}

/** The decision under the node's release override (the RELEASE table); `base` when it carries none. */
export function withRelease(
  base: NodeDecision,
  input: DecisionInput,
  tainted: NodeDecision['desiredTaints'],
): NodeDecision {
  const release = judgeRelease(input.node.annotations, input.now);
  if (release === undefined) return base;
  const key = `${release.verdict}|${release.until}`;
  const fresh = input.previous?.releaseReported !== key;
  const memory = { ...base.memory, releaseReported: key };
  if (release.verdict === 'invalid') {
    const events: NodeEvent[] = fresh
      ? [
          ...base.events,
          {
            type: 'Warning',
            reason: EventReason.ReleaseInvalid,
            message: `Ignored ${NodeOverrideAnnotation.releaseUntil}=${JSON.stringify(release.until)}: ${release.problem}. Nothing is lifted.`,
          },
        ]
      : base.events;
    return { ...base, events, release, memory };
  }
  if (release.verdict === 'expired') {
    const events: NodeEvent[] = fresh
      ? [
          {
            type: 'Normal',
            reason: EventReason.ReleaseEnded,
            message: `The ${describeRelease(release)} has run out: nodecare decides the node's taints again.`,
          },
          ...base.events,
        ]
      : base.events;
    return { ...base, events, release, memory };
  }
  const none = { bootstrap: false, runtime: false };
  const lifted = taintChanges(none, tainted, input.policy);
  const suppressed = taintChanges(none, base.desiredTaints, input.policy).map((c) =>
    c.replace(/^remove/, 'hold off'),
  );
  const words = [
    ...new Set([...lifted, ...suppressed.filter((c) => !lifted.includes(c.replace(/^hold off/, 'remove')))]),
  ];
  const judged: NodeRelease = { ...release, lifted: words };
  const events: NodeEvent[] = base.events.filter(
    (e) => e.reason !== EventReason.BootstrapTaintAdded && e.reason !== EventReason.RuntimeTaintAdded,
  );
  if (fresh) {
    events.unshift({
      type: 'Normal',
      reason: EventReason.ReleaseStarted,
      message: `Released by ${NodeOverrideAnnotation.releaseUntil}: ${describeRelease(release)}; nodecare lifts its taints until then (${words.join('; ') || 'none on the node'}), then decides them again.`,
    });
  }
  const endsMs = input.monotonicNow + (untilMs(release) - input.now);
  const earliest = (a: number | undefined): number => (a === undefined ? endsMs : Math.min(a, endsMs));
  return {
    ...base,
    desiredTaints: none,
    condition: {
      ...base.condition,
      message: capInput(
        `Released: ${describeRelease(release)}. ${base.condition.message}`,
        MAX_CONDITION_MESSAGE,
      ),
    },
    events,
    nextDeadlineMs: earliest(base.nextDeadlineMs),
    deadlines: { ...base.deadlines, fixedMs: earliest(base.deadlines.fixedMs) },
    release: judged,
    memory,
  };
}
