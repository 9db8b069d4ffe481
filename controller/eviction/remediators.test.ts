import { describe, expect, it } from 'vitest';
import type { KubeClient } from '../../lib/kube/client.ts';
import { classifyResponse } from '../../lib/kube/errors.ts';
import { createLogger, type Logger } from '../../lib/log.ts';
import { readNodeHold } from './evict.ts';
import {
  NODE_CLAIMS_PATH,
  NODE_HEALTH_CHECKS_PATH,
  RemediatorReads,
  nodeClaimDisrupting,
  nodeClaimOf,
  remediatingCheck,
  type NodeClaimObject,
  type NodeHealthCheckObject,
} from './remediators.ts';

describe('remediatingCheck (a NodeHealthCheck status naming the node with a remediation)', () => {
  const nhc = (status: NodeHealthCheckObject['status']): NodeHealthCheckObject => ({
    metadata: { name: 'nhc' },
    status,
  });
  const remediation = { resource: { kind: 'SelfNodeRemediation', name: 'node-a' }, started: 'now' };
  it.each<{ name: string; checks: NodeHealthCheckObject[]; remediating: string | undefined }>([
    { name: 'no NodeHealthCheck → free', checks: [], remediating: undefined },
    { name: 'no status → free', checks: [{ metadata: { name: 'nhc' } }], remediating: undefined },
    {
      name: 'the node listed with a remediation → that check',
      checks: [nhc({ unhealthyNodes: [{ name: 'node-a', remediations: [remediation] }] })],
      remediating: 'nhc',
    },
    {
      name: 'the node listed without remediations (minHealthy or a storm holds NHC back) → free',
      checks: [nhc({ unhealthyNodes: [{ name: 'node-a', remediations: [] }, { name: 'node-a' }] })],
      remediating: undefined,
    },
    {
      name: 'another node listed → free',
      checks: [nhc({ unhealthyNodes: [{ name: 'node-b', remediations: [remediation] }] })],
      remediating: undefined,
    },
    {
      name: 'the deprecated inFlightRemediations names the node → that check',
      checks: [nhc({ inFlightRemediations: { 'node-a': '2026-12-02T20:00:00Z' } })],
      remediating: 'nhc',
    },
    {
      name: 'a null entry is skipped',
      checks: [nhc({ unhealthyNodes: [null, { name: 'node-a', remediations: [remediation] }] })],
      remediating: 'nhc',
    },
  ])('$name', ({ checks, remediating }) => {
    expect(remediatingCheck(checks, 'node-a')).toBe(remediating);
  });
});

describe('nodeClaimDisrupting (Karpenter v1 NodeClaim)', () => {
  const claim = (conditions: Array<{ type: string; status: string }>, deleting = false): NodeClaimObject => ({
    metadata: { name: 'c', ...(deleting ? { deletionTimestamp: '2026-12-02T20:00:00Z' } : {}) },
    status: { conditions },
  });
  it.each<{ name: string; claim: NodeClaimObject; disrupting: boolean }>([
    {
      name: 'initialized, nothing else → free',
      claim: claim([{ type: 'Initialized', status: 'True' }]),
      disrupting: false,
    },
    {
      name: 'Drifted True alone (a candidate) → free',
      claim: claim([{ type: 'Drifted', status: 'True' }]),
      disrupting: false,
    },
    {
      name: 'Consolidatable True alone → free',
      claim: claim([{ type: 'Consolidatable', status: 'True' }]),
      disrupting: false,
    },
    {
      name: 'DisruptionReason True (committed) → disrupting',
      claim: claim([{ type: 'DisruptionReason', status: 'True' }]),
      disrupting: true,
    },
    {
      name: 'InstanceTerminating True → disrupting',
      claim: claim([{ type: 'InstanceTerminating', status: 'True' }]),
      disrupting: true,
    },
    {
      name: 'Rebooting True → disrupting',
      claim: claim([{ type: 'Rebooting', status: 'True' }]),
      disrupting: true,
    },
    {
      name: 'Rebooting False (done) → free',
      claim: claim([{ type: 'Rebooting', status: 'False' }]),
      disrupting: false,
    },
    { name: 'being deleted → disrupting', claim: claim([], true), disrupting: true },
  ])('$name', ({ claim: c, disrupting }) => {
    expect(nodeClaimDisrupting(c)).toBe(disrupting);
  });

  it('nodeClaimOf: the karpenter.sh owner reference of kind NodeClaim, or none', () => {
    expect(nodeClaimOf([{ apiVersion: 'karpenter.sh/v1', kind: 'NodeClaim', name: 'default-abc' }])).toEqual({
      name: 'default-abc',
      apiVersion: 'karpenter.sh/v1',
    });
    expect(nodeClaimOf([{ apiVersion: 'karpenter.sh/v1beta1', kind: 'NodeClaim', name: 'old' }])).toEqual({
      name: 'old',
      apiVersion: 'karpenter.sh/v1beta1',
    });
    expect(nodeClaimOf([{ apiVersion: 'example.com/v1', kind: 'NodeClaim', name: 'x' }])).toBeUndefined();
    expect(nodeClaimOf([{ apiVersion: 'v1', kind: 'Pod', name: 'x' }])).toBeUndefined();
    expect(nodeClaimOf(undefined)).toBeUndefined();
  });
});

describe('RemediatorReads (absent CRD skipped, refused read held and logged once)', () => {
  type Answer = object | Error;
  function client(answers: Record<string, Answer>): Pick<KubeClient, 'request'> & { paths: string[] } {
    const paths: string[] = [];
    return {
      paths,
      async request<T>(_method: string, path: string): Promise<T> {
        paths.push(path);
        const answer = answers[path];
        if (answer === undefined) throw classifyResponse(404, { message: 'not found' }, undefined, 'GET');
        if (answer instanceof Error) throw answer;
        return answer as T;
      },
    };
  }
  function logs(): { log: Logger; lines: Array<{ level: string; msg: string }> } {
    const lines: Array<{ level: string; msg: string }> = [];
    const log = createLogger(
      { level: 'debug', name: 'test' },
      { write: (line: string) => void lines.push(JSON.parse(line) as { level: string; msg: string }) },
    );
    return { log, lines };
  }
  const NODE_PATH = '/api/v1/nodes/node-a';
  const owned = {
    metadata: { ownerReferences: [{ apiVersion: 'karpenter.sh/v1', kind: 'NodeClaim', name: 'claim-a' }] },
  };
  const forbidden = () => classifyResponse(403, { message: 'forbidden' }, undefined, 'GET');

  it.each<{ name: string; answers: Record<string, Answer>; hold: string | undefined }>([
    {
      name: 'no NodeHealthCheck CRD (404), no NodeClaim owner → free',
      answers: { [NODE_PATH]: {} },
      hold: undefined,
    },
    {
      name: 'the NodeClaim the Node names is not there (404: gone, or its CRD not served) → NodeClaimDisruption',
      answers: { [NODE_PATH]: owned, [NODE_HEALTH_CHECKS_PATH]: { items: [] } },
      hold: 'NodeClaimDisruption',
    },
    {
      name: 'owned by an older NodeClaim version (v1beta1) → RemediatorUnreadable (fail safe, not judged by v1 rules)',
      answers: {
        [NODE_PATH]: {
          metadata: {
            ownerReferences: [{ apiVersion: 'karpenter.sh/v1beta1', kind: 'NodeClaim', name: 'claim-a' }],
          },
        },
        [NODE_HEALTH_CHECKS_PATH]: { items: [] },
        [`${NODE_CLAIMS_PATH}/claim-a`]: { status: { conditions: [] } },
      },
      hold: 'RemediatorUnreadable',
    },
    {
      name: 'a NodeHealthCheck remediating the node → NodeHealthCheck',
      answers: {
        [NODE_PATH]: {},
        [NODE_HEALTH_CHECKS_PATH]: {
          items: [
            { metadata: { name: 'n' }, status: { unhealthyNodes: [{ name: 'node-a', remediations: [{}] }] } },
          ],
        },
      },
      hold: 'NodeHealthCheck',
    },
    {
      name: 'its NodeClaim has DisruptionReason True → NodeClaimDisruption',
      answers: {
        [NODE_PATH]: owned,
        [NODE_HEALTH_CHECKS_PATH]: { items: [] },
        [`${NODE_CLAIMS_PATH}/claim-a`]: {
          status: { conditions: [{ type: 'DisruptionReason', status: 'True' }] },
        },
      },
      hold: 'NodeClaimDisruption',
    },
    {
      name: 'the NodeHealthCheck list refused (403) → RemediatorUnreadable (fail safe)',
      answers: { [NODE_PATH]: {}, [NODE_HEALTH_CHECKS_PATH]: forbidden() },
      hold: 'RemediatorUnreadable',
    },
    {
      name: 'the NodeClaim read refused (403) → RemediatorUnreadable',
      answers: { [NODE_PATH]: owned, [`${NODE_CLAIMS_PATH}/claim-a`]: forbidden() },
      hold: 'RemediatorUnreadable',
    },
    {
      name: 'the Node shows an owner already → the Node says it, nothing else read',
      answers: { [NODE_PATH]: { spec: { unschedulable: true } }, [NODE_HEALTH_CHECKS_PATH]: forbidden() },
      hold: 'Maintenance',
    },
  ])('$name', async ({ answers, hold }) => {
    const c = client(answers);
    const remediators = new RemediatorReads({ client: c, log: logs().log, timeoutMs: 5_000 });
    expect(await readNodeHold({ client: c, nodeName: 'node-a', timeoutMs: 5_000, remediators })).toBe(hold);
  });

  it('no NodeClaim read for a node without a NodeClaim owner; a refused read is logged once until allowed again', async () => {
    const answers: Record<string, Answer> = { [NODE_HEALTH_CHECKS_PATH]: forbidden() };
    const c = client(answers);
    const { log, lines } = logs();
    const remediators = new RemediatorReads({ client: c, log, timeoutMs: 5_000 });
    for (let i = 0; i < 3; i++)
      expect(await remediators.holdOf('node-a', undefined)).toBe('RemediatorUnreadable');
    expect(c.paths).toEqual([NODE_HEALTH_CHECKS_PATH, NODE_HEALTH_CHECKS_PATH, NODE_HEALTH_CHECKS_PATH]);
    const refused = lines.filter((l) => l.msg.startsWith('Remediator read refused'));
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatchObject({
      level: 'error',
      needs: 'list nodehealthchecks.remediation.medik8s.io',
    });
    answers[NODE_HEALTH_CHECKS_PATH] = { items: [] };
    expect(await remediators.holdOf('node-a', undefined)).toBeUndefined();
    expect(lines.filter((l) => l.msg === 'Remediator read allowed again')).toHaveLength(1);
    // The CRD removed: skipped, one debug line however many reads.
    delete answers[NODE_HEALTH_CHECKS_PATH];
    for (let i = 0; i < 3; i++) expect(await remediators.holdOf('node-a', undefined)).toBeUndefined();
    expect(lines.filter((l) => l.msg.startsWith('Remediator check skipped'))).toHaveLength(1);
  });
});
