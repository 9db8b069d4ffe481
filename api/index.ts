// api/: the nodecare contract shared by agent, controller and CLI. It owns the names (taints, labels,
// annotations, Lease roles), the SystemExtension schema and registration rules, the Lease encoding and the
// reasons. It imports nothing of ours (eslint.config.js, LAYERING).
export * from './names.ts';
export * from './reasons.ts';
export * from './extension.ts';
export * from './annotation.ts';
export * from './field-reader.ts';
export * from './naming.ts';
export * from './probe-kinds.ts';
export * from './probe-kind-entry.ts';
export * from './probe-spec.ts';
export * from './selector.ts';
export * from './quantity.ts';
export * from './registration.ts';
export * from './annotation-safety.ts';
export * from './rollout.ts';
export * from './label-wait.ts';
export * from './lease.ts';
export * from './text.ts';
export * from './taint-key.ts';
export * from './policy.ts';
