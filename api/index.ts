// The nodecare contract shared by agent, controller and CLI.
export * from './names.ts';
export * from './reasons.ts';
export * from './extension.ts';
export * from './selector.ts';
export * from './quantity.ts';
export * from './registration.ts';
export * from './lease.ts';
export * from './text.ts';
