// Why a node is in maintenance, as the decision's types name it (maintenance.ts reads the signals and decides).

export const MaintenanceCause = {
  Deleting: 'Deleting',
  GracefulNodeShutdownInProgress: 'GracefulNodeShutdownInProgress',
  MaintenanceInProgress: 'MaintenanceInProgress',
  DrainInProgress: 'DrainInProgress',
  Drained: 'Drained',
  Cordoned: 'Cordoned',
} as const;
export type MaintenanceCause = (typeof MaintenanceCause)[keyof typeof MaintenanceCause];

/** Why and since when a node is in maintenance (capped and inert: these are the node's words). */
export interface NodeMaintenance {
  cause: MaintenanceCause;
  /** RFC 3339 as written on the node ('' when nothing dates it). */
  since: string;
  /** The condition's reason and message, or the kubelet's; '' when there is none. */
  detail: string;
}

/** A MaintenancePlanned condition that is True: shown, never acted on. */
export interface PlannedMaintenance {
  since: string;
  detail: string;
}
