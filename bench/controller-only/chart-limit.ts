// The memory limit the chart gives the controller for a fleet of `nodes` (charts/nodecare/templates/
// _helpers.tpl, nodecare.controllerResources, with the values' own limit of 512 Mi): the limit the
// controller-only benchmark runs the controller under (bench/cgroup.ts). test/integration/install-chart.test.ts
// renders the chart and holds the two to the same answers.

const MIB = 1024 * 1024;
/** The chart's line for steady RSS: 136 MiB + 15 KiB a node. */
const BASE_MIB = 136;
const KIB_PER_NODE = 15;
/** values.yaml: controller.resources.limits.memory. */
const VALUES_LIMIT_MIB = 512;

/** The chart's memory limit for controller.fleetSize = `nodes`, in bytes. */
export function chartMemoryLimitBytes(nodes: number): number {
  const steady = BASE_MIB + Math.ceil((nodes * KIB_PER_NODE) / 1024);
  const limit = Math.ceil((steady * 10) / 7);
  return Math.max(Math.ceil(limit / 64) * 64, VALUES_LIMIT_MIB) * MIB;
}
