// A CSI node plugin registering through the kubelet's plugin registration, from its upstream manifest: not
// possible here, and this file says so in the suite's output. The Go module proxy refuses both halves of the
// kubernetes-csi reference pair at every version tried (docs/extensions.md, "CSI driver" lists them and the
// other CSI drivers tried), so neither can be built from source. Until one is served, the `csi` probe is
// shown on real nodes with the stand-in driver of fixtures/csi-driver.yaml (shipped.test.ts).

import { describe, it } from 'vitest';

const REFUSED = [
  'github.com/kubernetes-csi/csi-driver-host-path',
  'github.com/kubernetes-csi/node-driver-registrar',
].map((module) => `${module}: 403 Forbidden "This module version is not available"`);

const NOT_RUN = `the Go module proxy refuses ${REFUSED.join('; ')}`;
process.stderr.write(`[upstream-csi] NOT RUN: ${NOT_RUN}\n`);

describe(`csi-driver-host-path with node-driver-registrar (upstream) on real nodes (NOT RUN: ${NOT_RUN})`, () => {
  it.todo(
    'a node joins held until the driver registered with the kubelet and its Identity/Probe is ready; the driver broken, the runtime taint; mended, the taint gone',
  );
});
