// The pods on this node as its own kubelet knows them, for the podReady probe (KEP-4188, the kubelet's Pods API:
// beta and on by default in Kubernetes 1.37): one WatchPods stream on the kubelet's socket instead of a list and
// watch of pods through the API server. Less API server load at scale, no cluster-wide pod read, and it keeps
// answering while the API server is away. Loaded only when a podReady probe needs pods and the socket exists
// (agent/watches.ts), so a node without one never loads gRPC for it.

import { Client, credentials, Metadata, status, type ServiceError } from '@grpc/grpc-js';
import type { Clock, Timer } from '../../lib/clock.ts';
import { PROTO_FILES, service } from './proto.ts';

/** A pod as the podReady probe reads it, keyed by its UID. */
export interface KubeletPod {
  name: string;
  namespace: string;
  labels: Record<string, string>;
  ready: boolean;
}

interface WirePod {
  metadata?: {
    name?: string;
    namespace?: string;
    uid?: string;
    labels?: Record<string, string>;
    deletionTimestamp?: object | null;
  } | null;
  status?: { conditions?: Array<{ type?: string; status?: string }> } | null;
}

interface WatchEvent {
  type?: string;
  pod?: WirePod | null;
}

export interface KubeletPodsOptions {
  /** The kubelet's Pods API socket, e.g. /var/lib/kubelet/pods-api/pods-api.sock. */
  socket: string;
  clock: Clock;
  /** The pods or the sync state changed. */
  onChange(): void;
  /** The stream failed (it is opened again with backoff, unless the kubelet does not serve the API). */
  onError(err: unknown): void;
}

const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;
const MIN_BACKOFF_MS = 500;
const MAX_BACKOFF_MS = 30_000;

/** A decoded pod: bounded to what the probe reads. */
export function toKubeletPod(pod: WirePod): KubeletPod {
  const meta = pod.metadata ?? {};
  return {
    name: meta.name ?? '',
    namespace: meta.namespace ?? '',
    labels: meta.labels ?? {},
    ready:
      !meta.deletionTimestamp &&
      (pod.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True'),
  };
}

export class KubeletPods {
  /** By pod UID, as of the last complete initial sync and the events since. */
  readonly store = new Map<string, KubeletPod>();
  /** The initial list (ADDED events up to INITIAL_SYNC_COMPLETE) has arrived on the current stream. */
  synced = false;
  /** The kubelet answered UNIMPLEMENTED: it does not serve the Pods API (its feature gate is off). */
  unimplemented = false;
  private readonly options: KubeletPodsOptions;
  private client: Client | undefined;
  private call: ReturnType<Client['makeServerStreamRequest']> | undefined;
  private retry: Timer | undefined;
  private backoffMs = MIN_BACKOFF_MS;
  private stopped = false;

  constructor(options: KubeletPodsOptions) {
    this.options = options;
  }

  start(): void {
    this.stopped = false;
    this.open();
  }

  private open(): void {
    const method = service(PROTO_FILES.kubeletPods, 'v1alpha1.Pods').WatchPods!;
    this.client ??= new Client(`unix://${this.options.socket}`, credentials.createInsecure(), {
      'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
      'grpc.use_local_subchannel_pool': 1,
    });
    const call = this.client.makeServerStreamRequest(
      method.path,
      method.requestSerialize,
      method.responseDeserialize,
      {},
      new Metadata(),
    );
    this.call = call;
    // The initial list is gathered apart and replaces the store at INITIAL_SYNC_COMPLETE: a pod deleted while
    // the stream was down does not linger.
    let initial: Map<string, KubeletPod> | undefined = new Map();
    call.on('data', (event: WatchEvent) => {
      const uid = event.pod?.metadata?.uid ?? '';
      switch (event.type) {
        case 'ADDED':
        case 'MODIFIED':
          if (uid === '') return;
          (initial ?? this.store).set(uid, toKubeletPod(event.pod!));
          break;
        case 'DELETED':
          (initial ?? this.store).delete(uid);
          break;
        case 'INITIAL_SYNC_COMPLETE':
          if (!initial) return;
          this.store.clear();
          for (const [key, pod] of initial) this.store.set(key, pod);
          initial = undefined;
          this.synced = true;
          this.backoffMs = MIN_BACKOFF_MS;
          break;
        default:
          return;
      }
      if (!initial) this.options.onChange();
    });
    call.on('error', (err: ServiceError) => this.ended(call, err));
    call.on('end', () => this.ended(call, new Error('the kubelet ended the WatchPods stream')));
  }

  private ended(call: unknown, err: unknown): void {
    if (call !== this.call || this.stopped) return;
    this.call = undefined;
    this.synced = false;
    if ((err as Partial<ServiceError>).code === status.UNIMPLEMENTED) this.unimplemented = true;
    this.options.onError(err);
    this.options.onChange();
    if (this.unimplemented) return;
    const delay = this.backoffMs;
    this.backoffMs = Math.min(MAX_BACKOFF_MS, this.backoffMs * 2);
    this.retry = this.options.clock.setTimer(delay, () => {
      this.retry = undefined;
      if (!this.stopped) this.open();
    });
  }

  stop(): void {
    this.stopped = true;
    this.retry?.cancel();
    this.retry = undefined;
    this.call?.cancel();
    this.call = undefined;
    this.client?.close();
    this.client = undefined;
    this.synced = false;
  }
}
