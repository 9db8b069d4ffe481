import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { findProtoDir, method, PROTO_FILES } from './proto.ts';

const ROOT = resolve(import.meta.dirname, '..', '..');

describe('proto files', () => {
  it.each([
    { name: 'from the sources (agent/probes)', from: join(ROOT, 'agent', 'probes') },
    { name: 'from compiled code (dist/agent/probes)', from: join(ROOT, 'dist', 'agent', 'probes') },
  ])('are found $name', ({ from }) => {
    expect(findProtoDir(from)).toBe(join(ROOT, 'api', 'proto'));
  });

  it.each([
    {
      file: PROTO_FILES.health,
      service: 'grpc.health.v1.Health',
      name: 'Check',
      path: '/grpc.health.v1.Health/Check',
    },
    { file: PROTO_FILES.csi, service: 'csi.v1.Identity', name: 'Probe', path: '/csi.v1.Identity/Probe' },
    {
      file: PROTO_FILES.devicePlugin,
      service: 'v1beta1.DevicePlugin',
      name: 'GetDevicePluginOptions',
      path: '/v1beta1.DevicePlugin/GetDevicePluginOptions',
    },
    {
      file: PROTO_FILES.devicePlugin,
      service: 'v1beta1.DevicePlugin',
      name: 'ListAndWatch',
      path: '/v1beta1.DevicePlugin/ListAndWatch',
    },
  ])('$path has the upstream wire name', ({ file, service, name, path }) => {
    expect(method(file, service, name).path).toBe(path);
  });

  it('decodes GetDevicePluginOptions with the upstream field numbers', () => {
    const options = method(PROTO_FILES.devicePlugin, 'v1beta1.DevicePlugin', 'GetDevicePluginOptions');
    // pre_start_required = 1: true, get_preferred_allocation_available = 2: true
    expect(options.responseDeserialize(Buffer.from([0x08, 1, 0x10, 1]))).toMatchObject({
      pre_start_required: true,
      get_preferred_allocation_available: true,
    });
  });

  it('encodes the device plugin fields with the upstream field numbers', () => {
    const listAndWatch = method(PROTO_FILES.devicePlugin, 'v1beta1.DevicePlugin', 'ListAndWatch');
    const bytes = listAndWatch.responseSerialize({ devices: [{ ID: 'a', health: 'Healthy' }] });
    // devices = 1 (length-delimited): { ID = 1: "a", health = 2: "Healthy" }
    expect([...bytes]).toEqual([0x0a, 12, 0x0a, 1, 0x61, 0x12, 7, ...Buffer.from('Healthy')]);
  });
});
