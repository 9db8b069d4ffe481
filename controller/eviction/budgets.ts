// The budgets of the eviction plan beyond zones (issue 54 item 1, plan.ts): a node group's budget, a percent of
// its nodes rounded up, and the cluster's cap on nodes being evicted at once.

/** Why a node that qualifies waits although its zone is open. */
export const BudgetReason = {
  GroupBudget: 'GroupBudget',
  ParallelCap: 'ParallelCap',
} as const;
export type BudgetReason = (typeof BudgetReason)[keyof typeof BudgetReason];

/** The budgets in use, for the status a reader shows (allowed absent: no cap). */
export interface BudgetsInUse {
  groups: Array<{ group: string; nodes: number; allowed: number; evicting: number }>;
  parallel: { allowed?: number; evicting: number };
}

/** `percent` of `total`, rounded up: any budget above 0% of a non-empty set allows one. */
export function percentOf(percent: number, total: number): number {
  return Math.ceil((percent * total) / 100 - 1e-9);
}

/** The budgets' counts over every node: each group's size and nodes being evicted, and the cluster's. */
export interface Budgets {
  groupSize: Map<string, number>;
  groupEvicting: Map<string, number>;
  evicting: number;
  clusterAllowed: number;
  groupBudgetPercent: number;
}

/** The budget a new node would break by starting, or undefined when it may start. */
export function budgetBreak(budgets: Budgets, group: string): BudgetReason | undefined {
  const groupAllowed = percentOf(budgets.groupBudgetPercent, budgets.groupSize.get(group) ?? 0);
  if ((budgets.groupEvicting.get(group) ?? 0) >= groupAllowed) return BudgetReason.GroupBudget;
  if (budgets.evicting >= budgets.clusterAllowed) return BudgetReason.ParallelCap;
  return undefined;
}

export function countStart(budgets: Budgets, group: string): void {
  budgets.groupEvicting.set(group, (budgets.groupEvicting.get(group) ?? 0) + 1);
  budgets.evicting += 1;
}

/** The budgets as the plan leaves them: groups with a node being evicted or waiting, and the cluster's cap. */
export function budgetsUsed(budgets: Budgets, waitingGroups: readonly string[]): BudgetsInUse {
  const shown = new Set([...budgets.groupEvicting.keys(), ...waitingGroups]);
  return {
    groups: [...shown].sort().map((group) => {
      const nodes = budgets.groupSize.get(group) ?? 0;
      const allowed = percentOf(budgets.groupBudgetPercent, nodes);
      return { group, nodes, allowed, evicting: budgets.groupEvicting.get(group) ?? 0 };
    }),
    parallel: {
      ...(Number.isFinite(budgets.clusterAllowed) ? { allowed: budgets.clusterAllowed } : {}),
      evicting: budgets.evicting,
    },
  };
}
