import { describe, expect, it } from 'vitest';
import type { HostProbe } from '../../api/probe-spec.ts';
import { hostProbe } from './host.ts';
import { testContext } from './testing.ts';

// Facts of the real machine the tests run on, with thresholds that hold (or fail) on any machine.
const NO_SUCH_MOUNT = '/nodecare/no-such-mount';

describe('host probe', () => {
  it.each([
    {
      name: 'root mount, min 0% free → Healthy',
      facts: { diskFreePercent: { mount: '/', min: 0 } },
      outcome: 'Healthy',
    },
    {
      name: 'root mount, min 100% free → Unhealthy',
      facts: { diskFreePercent: { mount: '/', min: 100 } },
      outcome: 'Unhealthy',
    },
    {
      name: 'mount that does not exist → Unhealthy',
      facts: { diskFreePercent: { mount: NO_SUCH_MOUNT, min: 0 } },
      outcome: 'Unhealthy',
    },
    { name: 'memory, min 0 MiB → Healthy', facts: { memoryAvailableMiB: { min: 0 } }, outcome: 'Healthy' },
    {
      name: 'memory, min 1 PiB → Unhealthy',
      facts: { memoryAvailableMiB: { min: 2 ** 30 } },
      outcome: 'Unhealthy',
    },
    { name: 'loopback interface up → Healthy', facts: { interfaceUp: { name: 'lo' } }, outcome: 'Healthy' },
    {
      name: 'interface that does not exist → Unhealthy',
      facts: { interfaceUp: { name: 'nc-nope0' } },
      outcome: 'Unhealthy',
    },
    {
      name: 'interface name with a path → Unhealthy',
      facts: { interfaceUp: { name: '../lo' } },
      outcome: 'Unhealthy',
    },
    {
      name: 'GPUs from a vendor that does not exist → Unhealthy',
      facts: { gpu: { vendor: 'nodecare-no-such-vendor', min: 1 } },
      outcome: 'Unhealthy',
    },
  ])('$name', async ({ facts, outcome }) => {
    const result = await hostProbe({ kind: 'host', ...facts }, testContext());
    expect(result).toMatchObject({
      outcome,
      reason: outcome === 'Healthy' ? 'ProbeSucceeded' : 'HostCheckFailed',
    });
  });

  it('every fact must hold, and the message names only the failing ones', async () => {
    const spec: HostProbe = {
      kind: 'host',
      diskFreePercent: { mount: NO_SUCH_MOUNT, min: 10 },
      memoryAvailableMiB: { min: 0 },
      interfaceUp: { name: 'lo' },
    };
    const result = await hostProbe(spec, testContext());
    expect(result).toEqual({
      outcome: 'Unhealthy',
      reason: 'HostCheckFailed',
      message: `mount ${NO_SUCH_MOUNT} not found`,
    });
  });

  it('healthy message lists every fact observed', async () => {
    const spec: HostProbe = { kind: 'host', memoryAvailableMiB: { min: 0 }, interfaceUp: { name: 'lo' } };
    const result = await hostProbe(spec, testContext());
    expect(result.outcome).toBe('Healthy');
    expect(result.message).toMatch(/^\d+ MiB memory available; interface lo (up|unknown)$/);
  });
});
