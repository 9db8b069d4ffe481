// Real ServiceAccount tokens from the TokenRequest API, optionally bound to a Pod on a Node, so tests can
// prove least-privilege RBAC and node-scoped admission with the identities the components really run as.

import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';

export interface TokenOptions {
  namespace: string;
  serviceAccount: string;
  /** Bind the token to this Pod (which must run as the ServiceAccount); its node name lands in the token. */
  boundPod?: { name: string; uid: string };
  expirationSeconds?: number;
}

export async function mintServiceAccountToken(admin: KubeConfig, options: TokenOptions): Promise<string> {
  const core = admin.makeApiClient(CoreV1Api);
  const response = await core.createNamespacedServiceAccountToken({
    name: options.serviceAccount,
    namespace: options.namespace,
    body: {
      spec: {
        audiences: [],
        expirationSeconds: options.expirationSeconds ?? 3600,
        ...(options.boundPod
          ? {
              boundObjectRef: {
                apiVersion: 'v1',
                kind: 'Pod',
                name: options.boundPod.name,
                uid: options.boundPod.uid,
              },
            }
          : {}),
      },
    },
  });
  const token = response.status?.token;
  if (!token)
    throw new Error(`TokenRequest for ${options.namespace}/${options.serviceAccount} returned no token`);
  return token;
}

/** A KubeConfig for the same server that authenticates with `token` (and nothing of the admin's). */
export function kubeConfigForToken(admin: KubeConfig, token: string, user = 'token-user'): KubeConfig {
  const cluster = admin.getCurrentCluster();
  if (!cluster) throw new Error('admin kubeconfig has no current cluster');
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [cluster],
    users: [{ name: user, token }],
    contexts: [{ name: 'ctx', cluster: cluster.name, user }],
    currentContext: 'ctx',
  });
  return kc;
}

/**
 * What the agent DaemonSet's pod on `nodeName` would hold: a Pod of the nodecare-agent ServiceAccount on that
 * node (no kubelet runs it) and a token bound to it, which carries the node's name and UID.
 */
export async function mintAgentTokenOnNode(
  admin: KubeConfig,
  options: { namespace: string; nodeName: string; podName: string; labels?: Record<string, string> },
): Promise<{ token: string; pod: { name: string; uid: string } }> {
  const core = admin.makeApiClient(CoreV1Api);
  const created = await core.createNamespacedPod({
    namespace: options.namespace,
    body: {
      metadata: { name: options.podName, ...(options.labels ? { labels: options.labels } : {}) },
      spec: {
        serviceAccountName: 'nodecare-agent',
        nodeName: options.nodeName,
        automountServiceAccountToken: false,
        containers: [{ name: 'agent', image: 'nodecare:test' }],
      },
    },
  });
  const pod = { name: created.metadata!.name!, uid: created.metadata!.uid! };
  const token = await mintServiceAccountToken(admin, {
    namespace: options.namespace,
    serviceAccount: 'nodecare-agent',
    boundPod: pod,
  });
  return { token, pod };
}
