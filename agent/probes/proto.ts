// The gRPC services the probes call (and the kubelet's Pods API the podReady probe reads), loaded from our
// minimal wire-compatible descriptions in api/proto/.

import { existsSync } from '../../lib/fs.ts';
import { dirname, join } from 'node:path';
import {
  loadSync,
  type MethodDefinition,
  type PackageDefinition,
  type ServiceDefinition,
} from '@grpc/proto-loader';

export const PROTO_FILES = {
  health: 'grpc_health_v1.proto',
  csi: 'csi_v1.proto',
  devicePlugin: 'deviceplugin_v1beta1.proto',
  kubeletPods: 'kubelet_pods_v1alpha1.proto',
} as const;
type ProtoFile = (typeof PROTO_FILES)[keyof typeof PROTO_FILES];

/**
 * api/proto sits at the package root: two levels up from agent/probes when running the TypeScript sources,
 * three from dist/agent/probes when running compiled code (package.json "files" ships api/proto beside dist).
 * Searching upwards finds it in both layouts.
 */
export function findProtoDir(from: string = import.meta.dirname): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, 'api', 'proto');
    if (existsSync(join(candidate, PROTO_FILES.health))) return candidate;
    if (dirname(dir) === dir) throw new Error(`api/proto not found in ${from} or above`);
  }
}

const loaded = new Map<ProtoFile, PackageDefinition>();

/** `defaults: true` so an absent message field decodes as null and a present empty one as an object. */
function load(file: ProtoFile): PackageDefinition {
  let definition = loaded.get(file);
  if (!definition) {
    definition = loadSync(join(findProtoDir(), file), {
      keepCase: true,
      longs: String,
      enums: String,
      defaults: true,
      oneofs: true,
    });
    loaded.set(file, definition);
  }
  return definition;
}

/** A service by its full name, e.g. `service(PROTO_FILES.health, 'grpc.health.v1.Health')`. */
export function service(file: ProtoFile, name: string): ServiceDefinition {
  const definition = load(file)[name];
  // Message and enum definitions carry a `format`; services are plain maps of methods.
  if (!definition || 'format' in definition) throw new Error(`${file} does not define service ${name}`);
  return definition as ServiceDefinition;
}

/** A method of a service, e.g. `method(PROTO_FILES.health, 'grpc.health.v1.Health', 'Check')`. */
export function method(file: ProtoFile, serviceName: string, name: string): MethodDefinition<object, object> {
  const found = service(file, serviceName)[name];
  if (!found) throw new Error(`${file} does not define ${serviceName}/${name}`);
  return found;
}
