// What the API server serves of the optional features nodecare uses (issue 23 item 1, docs/install.md "Supported
// Kubernetes versions"): checked once at start by the agent and the controller from the discovery documents, each
// reported in one line — available, or what nodecare turns off without it — so nothing silently needs a newer
// API server. The probes and writes that use a feature still handle its absence on their own (a resourceSlices
// probe reports Unknown, say); this says so up front.

import type { KubeClient } from './client.ts';
import { isKubeError, KubeErrorCode } from './errors.ts';

export interface ApiFeature {
  /** A short name for logs and the metric label. */
  name: string;
  groupVersion: string;
  resource: string;
  /** The Kubernetes version that serves it. */
  since: string;
  /** What nodecare does without it, in words. */
  whenMissing: string;
}

/** The optional API features, each with what nodecare does without it. */
export const API_FEATURES = {
  resourceSlices: {
    name: 'resourceSlices',
    groupVersion: 'resource.k8s.io/v1',
    resource: 'resourceslices',
    since: '1.34',
    whenMissing: 'resourceSlices probes report Unknown (DRA ResourceSlices are not served)',
  },
  validatingAdmissionPolicy: {
    name: 'validatingAdmissionPolicy',
    groupVersion: 'admissionregistration.k8s.io/v1',
    resource: 'validatingadmissionpolicies',
    since: '1.30',
    whenMissing:
      "the agent Lease admission policy cannot be installed: an agent's token is not held to its own node's Leases",
  },
  mutatingAdmissionPolicy: {
    name: 'mutatingAdmissionPolicy',
    groupVersion: 'admissionregistration.k8s.io/v1',
    resource: 'mutatingadmissionpolicies',
    since: '1.36',
    whenMissing:
      'the bootstrap-taint-at-registration component cannot be installed: nodes must register with --register-with-taints',
  },
} as const satisfies Record<string, ApiFeature>;

export interface FeatureReport {
  feature: ApiFeature;
  available: boolean;
  /** Set when discovery itself failed (not the same as "not served"). */
  error?: unknown;
}

/** Which of `features` the API server serves, reading each group-version's discovery document once. */
export async function detectFeatures(
  client: Pick<KubeClient, 'get'>,
  features: readonly ApiFeature[],
): Promise<FeatureReport[]> {
  const documents = new Map<string, Promise<{ resources?: Array<{ name?: string }> } | 'not served'>>();
  for (const { groupVersion } of features)
    if (!documents.has(groupVersion))
      documents.set(
        groupVersion,
        client
          .get<{ resources?: Array<{ name?: string }> }>(`/apis/${groupVersion}`)
          .catch((err: unknown) => {
            if (isKubeError(err, KubeErrorCode.NotFound)) return 'not served' as const;
            throw err;
          }),
      );
  return Promise.all(
    features.map(async (feature): Promise<FeatureReport> => {
      try {
        const document = await documents.get(feature.groupVersion)!;
        const available =
          document !== 'not served' && (document.resources ?? []).some((r) => r.name === feature.resource);
        return { feature, available };
      } catch (error) {
        return { feature, available: false, error };
      }
    }),
  );
}

/** One line for a report: `resource.k8s.io/v1 resourceslices: available` or `…: turned off: … (needs 1.34+)`. */
export function describeFeature(report: FeatureReport): string {
  const { feature } = report;
  const what = `${feature.groupVersion} ${feature.resource}`;
  if (report.available) return `${what}: available`;
  if (report.error !== undefined)
    return `${what}: could not be checked (discovery failed); assuming it is not`;
  return `${what}: not served (needs Kubernetes ${feature.since}+): ${feature.whenMissing}`;
}

/**
 * Sets `gauge{feature}` (nodecare_{agent,controller}_feature_available) to 1 for a feature served and 0 for one
 * not served; one discovery could not check is left unset rather than reported as missing.
 */
export function recordFeatures(
  reports: readonly FeatureReport[],
  gauge: { set(labels: { feature: string }, value: number): void },
): void {
  for (const report of reports)
    if (report.error === undefined) gauge.set({ feature: report.feature.name }, report.available ? 1 : 0);
}

/** Checks `features` and logs one line each (info when available, warn when not); never throws. */
export async function reportFeatures(
  client: Pick<KubeClient, 'get'>,
  features: readonly ApiFeature[],
  log: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void },
): Promise<FeatureReport[]> {
  const reports = await detectFeatures(client, features);
  for (const report of reports) {
    const line = {
      feature: report.feature.name,
      available: report.available,
      detail: describeFeature(report),
    };
    if (report.available) log.info(line, 'Feature check');
    else log.warn({ ...line, ...(report.error ? { err: report.error } : {}) }, 'Feature check: turned off');
  }
  return reports;
}
