// Who puts a taint on a node and what it means: nodecare's own two taints and the well-known taints of the
// kubelet, the node lifecycle controller, cloud providers, the Cluster Autoscaler, Karpenter, the
// node-readiness-controller and the not-ready taints of common CNI and CSI agents. `kubectl nodecare explain`
// answers "why can't pods land here" across every taint, not only nodecare's.

import type { NodeTaint } from '../controller/decide/index.ts';

export interface TaintInfo {
  /** Who adds (and removes) it. */
  owner: string;
  /** What it says about the node. */
  meaning: string;
  /** Set for nodecare's own taints. */
  nodecare?: 'bootstrap' | 'runtime';
}

interface Entry extends TaintInfo {
  /** An exact key, or a prefix ending in `/` (every key under it). */
  key: string;
}

const KUBELET = 'kubelet / node lifecycle controller';

const CATALOG: readonly Entry[] = [
  {
    key: 'node.kubernetes.io/not-ready',
    owner: KUBELET,
    meaning: 'the node condition Ready is False: the kubelet reports the node not ready',
  },
  {
    key: 'node.kubernetes.io/unreachable',
    owner: KUBELET,
    meaning: 'the node condition Ready is Unknown: the kubelet stopped reporting (node down or partitioned)',
  },
  {
    key: 'node.kubernetes.io/memory-pressure',
    owner: KUBELET,
    meaning: 'the kubelet reports MemoryPressure',
  },
  { key: 'node.kubernetes.io/disk-pressure', owner: KUBELET, meaning: 'the kubelet reports DiskPressure' },
  { key: 'node.kubernetes.io/pid-pressure', owner: KUBELET, meaning: 'the kubelet reports PIDPressure' },
  {
    key: 'node.kubernetes.io/network-unavailable',
    owner: KUBELET,
    meaning: 'the node condition NetworkUnavailable is True: its pod network (routes, CNI) is not set up',
  },
  {
    key: 'node.kubernetes.io/unschedulable',
    owner: 'kubectl cordon / drain (spec.unschedulable)',
    meaning: 'the node is cordoned',
  },
  {
    key: 'node.kubernetes.io/out-of-service',
    owner: 'an operator (non-graceful node shutdown)',
    meaning: 'the node is shut down; its pods are force-deleted and volumes detached',
  },
  {
    key: 'node.cloudprovider.kubernetes.io/uninitialized',
    owner: 'cloud-controller-manager',
    meaning: 'the cloud provider has not initialized the node yet (addresses, zone, provider ID)',
  },
  {
    key: 'node.cloudprovider.kubernetes.io/shutdown',
    owner: 'cloud-controller-manager',
    meaning: 'the cloud instance is shut down',
  },
  {
    key: 'node-role.kubernetes.io/control-plane',
    owner: 'kubeadm (cluster setup)',
    meaning: 'a control-plane node: only pods that tolerate it run here',
  },
  {
    key: 'ToBeDeletedByClusterAutoscaler',
    owner: 'Cluster Autoscaler',
    meaning: 'the autoscaler is draining the node to delete it (scale-down)',
  },
  {
    key: 'DeletionCandidateOfClusterAutoscaler',
    owner: 'Cluster Autoscaler',
    meaning: 'the node is unneeded and a candidate for scale-down (PreferNoSchedule)',
  },
  {
    key: 'startup-taint.cluster-autoscaler.kubernetes.io/',
    owner:
      'Cluster Autoscaler convention (a startup taint; some component removes it once the node is set up)',
    meaning: 'the node counts as not started yet, as upcoming capacity',
  },
  {
    key: 'status-taint.cluster-autoscaler.kubernetes.io/',
    owner: 'Cluster Autoscaler convention (a status taint set by some component)',
    meaning: 'the node counts as Ready for the autoscaler but some component reports it unfit',
  },
  {
    key: 'ignore-taint.cluster-autoscaler.kubernetes.io/',
    owner: 'Cluster Autoscaler convention (deprecated startup taint prefix)',
    meaning: 'treated like a startup taint: the node counts as not started yet',
  },
  {
    key: 'karpenter.sh/unregistered',
    owner: 'Karpenter',
    meaning: 'the node has not registered with its NodeClaim yet; Karpenter removes it on registration',
  },
  {
    key: 'karpenter.sh/disrupted',
    owner: 'Karpenter',
    meaning: 'Karpenter is disrupting the node (consolidation, drift, expiry): it is being drained',
  },
  {
    key: 'karpenter.sh/disruption',
    owner: 'Karpenter (before v1)',
    meaning: 'Karpenter is disrupting the node: it is being drained',
  },
  {
    key: 'readiness.k8s.io/',
    owner: 'node-readiness-controller (a NodeReadinessRule)',
    meaning:
      'a readiness rule is not satisfied yet; the controller removes it when the rule’s conditions hold',
  },
  {
    key: 'node.cilium.io/agent-not-ready',
    owner: 'Cilium (CNI agent)',
    meaning: 'the Cilium agent on this node is not running yet; it removes the taint once networking works',
  },
  {
    key: 'node.gardener.cloud/critical-components-not-ready',
    owner: 'Gardener',
    meaning: 'node-critical components (CNI, CSI, kube-proxy, ...) are not ready on this node yet',
  },
  {
    key: 'ebs.csi.aws.com/agent-not-ready',
    owner: 'AWS EBS CSI driver (node plugin)',
    meaning: 'the EBS CSI node plugin has not started; it removes the taint once it runs',
  },
  {
    key: 'efs.csi.aws.com/agent-not-ready',
    owner: 'AWS EFS CSI driver (node plugin)',
    meaning: 'the EFS CSI node plugin has not started; it removes the taint once it runs',
  },
  {
    key: 'nvidia.com/gpu',
    owner: 'the node pool (GPU nodes)',
    meaning: 'a GPU node reserved for pods that request or tolerate GPUs',
  },
  {
    key: 'kubernetes.azure.com/scalesetpriority',
    owner: 'AKS',
    meaning: 'a spot node: only pods that tolerate eviction at short notice run here',
  },
  {
    key: 'cloud.google.com/gke-spot',
    owner: 'GKE',
    meaning: 'a spot node: only pods that tolerate preemption run here',
  },
];

/** Agents that follow the `<driver>/agent-not-ready` convention (CSI node plugins, CNI agents). */
const AGENT_NOT_READY = /^([a-z0-9.-]+)\/agent-not-ready$/;

/** nodecare's taint keys as the controller is configured (the defaults unless told otherwise). */
export interface OwnTaintKeys {
  bootstrap: string;
  runtime: string;
}

export function describeTaint(taint: Pick<NodeTaint, 'key'>, own: OwnTaintKeys): TaintInfo | undefined {
  if (taint.key === own.bootstrap) {
    return {
      owner: 'nodecare (bootstrap taint)',
      meaning:
        'the node is bootstrapping: the nodecare agent has not reported yet or a required critical extension is not Healthy yet',
      nodecare: 'bootstrap',
    };
  }
  if (taint.key === own.runtime) {
    return {
      owner: 'nodecare (runtime taint)',
      meaning: 'a required critical extension failed after the node was Ready',
      nodecare: 'runtime',
    };
  }
  const exact = CATALOG.find((e) => e.key === taint.key);
  if (exact) return { owner: exact.owner, meaning: exact.meaning };
  const prefix = CATALOG.find((e) => e.key.endsWith('/') && taint.key.startsWith(e.key));
  if (prefix) return { owner: prefix.owner, meaning: prefix.meaning };
  const agent = AGENT_NOT_READY.exec(taint.key);
  if (agent) {
    return {
      owner: `the ${agent[1]} node agent (CSI/CNI "agent-not-ready" convention)`,
      meaning: `the ${agent[1]} agent has not started on this node yet; it removes the taint once it runs`,
    };
  }
  return undefined;
}

/** Whether a taint keeps pods that do not tolerate it off the node (PreferNoSchedule only discourages). */
export function blocksScheduling(taint: Pick<NodeTaint, 'effect'>): boolean {
  return taint.effect === 'NoSchedule' || taint.effect === 'NoExecute';
}
