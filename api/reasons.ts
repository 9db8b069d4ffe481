// Stable vocabularies (docs/conventions.md 11): CamelCase reasons for probe results, lease states, node conditions and
// events. Business code refers to these constants, never to string literals.

/** Reasons a probe or the agent's state machine reports on an extension's Lease. */
export const ProbeReason = {
  // Healthy
  ProbeSucceeded: 'ProbeSucceeded',
  // Unhealthy: the transport said no
  ConnectionRefused: 'ConnectionRefused',
  ProbeTimeout: 'ProbeTimeout',
  BadStatus: 'BadStatus',
  BodyMismatch: 'BodyMismatch',
  NotServing: 'NotServing',
  NotReady: 'NotReady',
  TooFewDevices: 'TooFewDevices',
  ResourceMissing: 'ResourceMissing',
  ConditionNotMet: 'ConditionNotMet',
  TooFewPodsReady: 'TooFewPodsReady',
  CommandFailed: 'CommandFailed',
  FileMissing: 'FileMissing',
  FileStale: 'FileStale',
  ContentMismatch: 'ContentMismatch',
  ProcessMissing: 'ProcessMissing',
  HostCheckFailed: 'HostCheckFailed',
  ConnectionFailed: 'ConnectionFailed',
  // Unknown: could not determine
  InvalidRegistration: 'InvalidRegistration',
  PermissionDenied: 'PermissionDenied',
  ProbeError: 'ProbeError',
  NodeNotObserved: 'NodeNotObserved',
  CommandError: 'CommandError',
  // State machine
  AwaitingFirstProbe: 'AwaitingFirstProbe',
  StartupGrace: 'StartupGrace',
} as const;
export type ProbeReason = (typeof ProbeReason)[keyof typeof ProbeReason];

/** Reasons of the node condition `ExtensionsReady`. */
export const ConditionReason = {
  AllExtensionsHealthy: 'AllExtensionsHealthy',
  ExtensionsUnhealthy: 'ExtensionsUnhealthy',
  ExtensionsProgressing: 'ExtensionsProgressing',
  BootstrapTimeout: 'BootstrapTimeout',
  AgentNotReporting: 'AgentNotReporting',
  /** An extension could not be determined (agent's Unknown, invalid registration); no fault set or cleared. */
  ExtensionsUnknown: 'ExtensionsUnknown',
  /**
   * The kubelet's own `Ready` condition is not True (Unknown or False): Kubernetes says the node is not Ready, so
   * extension results are not trusted until it is Ready again (docs/design.md section 5).
   */
  NodeNotReady: 'NodeNotReady',
  /**
   * The node is in maintenance (cordoned, draining, drained, shutting down, being deleted; the MAINTENANCE table
   * in controller/decide/maintenance.ts) and not every extension is Healthy: expected, so not acted on.
   */
  InMaintenance: 'InMaintenance',
} as const;
export type ConditionReason = (typeof ConditionReason)[keyof typeof ConditionReason];

/** Event reasons (docs/design.md section 5), emitted on transitions only. */
export const EventReason = {
  BootstrapTaintRemoved: 'BootstrapTaintRemoved',
  BootstrapTaintAdded: 'BootstrapTaintAdded',
  RuntimeTaintAdded: 'RuntimeTaintAdded',
  RuntimeTaintRemoved: 'RuntimeTaintRemoved',
  ExtensionUnhealthy: 'ExtensionUnhealthy',
  InvalidRegistration: 'InvalidRegistration',
  BootstrapTimeout: 'BootstrapTimeout',
  CorrelatedFailure: 'CorrelatedFailure',
  PodEvicted: 'PodEvicted',
  /**
   * Eviction left a Degraded node or one of its pods alone because another owner acts on it (Normal, once per
   * node and reason; controller/eviction/owners.ts): karpenter.sh/do-not-disrupt, Karpenter's or medik8s'
   * taints, maintenance.
   */
  EvictionSkipped: 'EvictionSkipped',
  /** A node annotation names an extension a SystemExtension defines without allowing an override. */
  RegistrationConflict: 'RegistrationConflict',
  /** The API server refused a roll-up write as invalid (regarding ClusterHealth; a nodecare bug). */
  RollupRejected: 'RollupRejected',
  /** The kubelet's `Ready` condition stopped being True (Warning, once per transition into NotReady). */
  NodeNotReady: 'NodeNotReady',
  /** The node went into maintenance (Normal, once per spell): nodecare stops acting on its extension results. */
  MaintenanceStarted: 'MaintenanceStarted',
  /** The node is out of maintenance (Normal): nodecare acts on its extension results again. */
  MaintenanceEnded: 'MaintenanceEnded',
  /** A taint change held by a suspension (Normal, once per held change): what nodecare would have written. */
  TaintChangeSuspended: 'TaintChangeSuspended',
  /**
   * A new node's wait for labels a SystemExtension's nodeSelector reads ran out (Normal, once): that extension
   * does not apply to the node (spec.labelWait, docs/extensions.md "Labels set after registration").
   */
  LabelWaitEnded: 'LabelWaitEnded',
  /** A release override (nodecare.io/release-until) lifted nodecare's taints (Normal, once per override). */
  ReleaseStarted: 'ReleaseStarted',
  /** A release override ran out: nodecare decides the node's taints again (Normal, once per override). */
  ReleaseEnded: 'ReleaseEnded',
  /** A release override is malformed or too far ahead (Warning, once per value): ignored, nothing lifted. */
  ReleaseInvalid: 'ReleaseInvalid',
} as const;
export type EventReason = (typeof EventReason)[keyof typeof EventReason];

/**
 * Reasons the controller gives an extension when it does not take the state from a live Lease of the node's
 * current boot (its own view: agent gone, lease missing or expired, registration invalid).
 */
export const ControllerReason = {
  InvalidRegistration: 'InvalidRegistration',
  AwaitingAgent: 'AwaitingAgent',
  AgentNotReporting: 'AgentNotReporting',
  AwaitingFirstReport: 'AwaitingFirstReport',
  LeaseMissing: 'LeaseMissing',
  LeaseExpired: 'LeaseExpired',
  LeaseStateInvalid: 'LeaseStateInvalid',
  /** The kubelet's `Ready` condition is not True: the extension's result is not trusted (neither fault nor health). */
  NodeNotReady: 'NodeNotReady',
} as const;
export type ControllerReason = (typeof ControllerReason)[keyof typeof ControllerReason];
