// The kubelet's part the demo plays for its GPU node. KWOK's nodes have no kubelet, so nothing would count the
// device plugin's GPUs into the Node's status, where the scheduler, Karpenter and nodecare's devicePlugin probe
// read them. This does for the one plugin what a kubelet's device manager does: it is the plugin's one client,
// on one ListAndWatch stream, and writes what it hears to the Node's status subresource, every device in
// `status.capacity[resource]` and only the Healthy ones in `status.allocatable[resource]`. On start it zeroes
// both, as a kubelet does before a plugin registers. When the stream ends (the plugin stopped), the devices
// stay in capacity with none allocatable (the kubelet keeps a gone plugin's devices for a 5-minute grace; the
// demo never waits that long) and it dials again every second. Registration (the plugin calling the kubelet's
// Registration service) is left out: the demo knows the socket.

import { Client, credentials, Metadata, type ClientReadableStream } from '@grpc/grpc-js';
import { method, PROTO_FILES } from '../agent/probes/proto.ts';
import type { PluginDevice } from './endpoints.ts';

/** What the kubelet writes for one extended resource. */
export interface DeviceCounts {
  /** Every device the plugin listed. */
  capacity: number;
  /** The Healthy ones. */
  allocatable: number;
}

export interface DeviceManagerOptions {
  /** The plugin's unix socket. */
  socket: string;
  /** Writes the counts to the Node's status (a patch of the status subresource); throws when it fails. */
  write: (counts: DeviceCounts) => Promise<void>;
  /** Says each count written, and each failed write. */
  say: (line: string) => void;
  /** After a failed write or a stream that ended, before the next try (default 1000). */
  retryMs?: number;
}

const sameCounts = (a: DeviceCounts | undefined, b: DeviceCounts): boolean =>
  a?.capacity === b.capacity && a.allocatable === b.allocatable;

export class DeviceManager {
  private readonly options: DeviceManagerOptions;
  private readonly retryMs: number;
  private desired: DeviceCounts = { capacity: 0, allocatable: 0 };
  private written: DeviceCounts | undefined;
  private writing: Promise<void> | undefined;
  private client: Client | undefined;
  private call: ClientReadableStream<object> | undefined;
  private redial: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(options: DeviceManagerOptions) {
    this.options = options;
    this.retryMs = options.retryMs ?? 1000;
  }

  /** Zeroes the resource on the Node, then holds the plugin's stream; resolves once that first write is done. */
  async start(): Promise<void> {
    this.dial();
    await this.flush();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.redial);
    this.call?.cancel();
    this.client?.close();
  }

  private dial(): void {
    if (this.stopped) return;
    const listAndWatch = method(PROTO_FILES.devicePlugin, 'v1beta1.DevicePlugin', 'ListAndWatch');
    const client = new Client(`unix://${this.options.socket}`, credentials.createInsecure());
    const call = client.makeServerStreamRequest(
      listAndWatch.path,
      listAndWatch.requestSerialize,
      listAndWatch.responseDeserialize,
      {},
      new Metadata(),
      {},
    );
    this.client = client;
    this.call = call;
    call.on('data', (answer: { devices?: PluginDevice[] }) => {
      const devices = answer.devices ?? [];
      this.set({
        capacity: devices.length,
        allocatable: devices.filter((d) => d.health === 'Healthy').length,
      });
    });
    let ended = false;
    const end = (): void => {
      if (ended) return;
      ended = true;
      client.close();
      // The plugin is gone: its devices stay known, none of them allocatable.
      this.set({ capacity: this.desired.capacity, allocatable: 0 });
      if (!this.stopped) this.redial = setTimeout(() => this.dial(), this.retryMs);
    };
    call.on('error', end);
    call.on('end', end);
  }

  private set(counts: DeviceCounts): void {
    this.desired = counts;
    void this.flush();
  }

  /** One write at a time, always of the latest counts; a failed write is tried again. */
  private flush(): Promise<void> {
    this.writing ??= this.writeLatest().finally(() => {
      this.writing = undefined;
      // Counts set while the last write finished.
      if (!this.stopped && !sameCounts(this.written, this.desired)) void this.flush();
    });
    return this.writing;
  }

  private async writeLatest(): Promise<void> {
    while (!this.stopped && !sameCounts(this.written, this.desired)) {
      const counts = this.desired;
      try {
        await this.options.write(counts);
        this.written = counts;
        this.options.say(`capacity ${counts.capacity}, allocatable ${counts.allocatable} (the Healthy ones)`);
      } catch (err) {
        this.options.say(`writing the node's status failed, trying again: ${String(err)}`);
        await new Promise((resolve) => setTimeout(resolve, this.retryMs));
      }
    }
  }
}
