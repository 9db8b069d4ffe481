// The gRPC services the probes call, loaded from our minimal wire-compatible copies in api/proto/.

import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { loadSync, type MethodDefinition, type PackageDefinition } from '@grpc/proto-loader';

export const PROTO_FILES = {
  health: 'grpc_health_v1.proto',
  csi: 'csi_v1.proto',
  devicePlugin: 'deviceplugin_v1beta1.proto',
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

/** A method of a service, e.g. `method(PROTO_FILES.health, 'grpc.health.v1.Health', 'Check')`. */
export function method(file: ProtoFile, service: string, name: string): MethodDefinition<object, object> {
  const definition = load(file)[service] as Record<string, MethodDefinition<object, object>> | undefined;
  const found = definition?.[name];
  if (!found?.path) throw new Error(`${file} does not define ${service}/${name}`);
  return found;
}
