// V8 settings for the controller's memory (docs/design.md P5: 256 MiB RSS at 5,000 nodes × 5 extensions),
// applied by the program itself so that the binary meets the goal at default settings however it is started.
// Imported first by controller/start.ts (loaded by main.ts after the Node.js version check): modules evaluate
// in import order, so this runs before any other module loads. Measured in docs/adr/0007.
// - `--semi-space-growth-factor=1`: the young generation stays at its initial size instead of doubling, up to
//   128 MiB, whenever a scavenge finds many survivors (the watch streams and in-flight reconciles keep objects
//   alive across scavenges). V8 reads `--max-semi-space-size` only when it creates the heap, too late from
//   here; the growth factor it reads at each growth. Set after the other imports, it finds the young
//   generation already grown to 8 MiB.
// - `--optimize-for-size`: V8 grows the old generation by a small factor over what survived the last full
//   collection, not by up to four times while the program allocates fast. Without it the convergence after a
//   start left 110–200 MiB of old generation, mostly garbage, for a live heap of about 55 MiB.
// Both take effect when set from the program (measured), so unlike the agent (agent/runtime-flags.ts) the
// controller does not replace itself to start with them.

import { setFlagsFromString } from 'node:v8';

setFlagsFromString('--semi-space-growth-factor=1');
setFlagsFromString('--optimize-for-size');
