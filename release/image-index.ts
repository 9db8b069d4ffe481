// Prints what an OCI archive holds, for release/release.sh's artifact list: the image's name and the digest a
// registry gives it once pushed, then each platform's manifest digest.
//   node release/image-index.ts <archive>

import { readImageIndex } from '../test/image/image.ts';

const archive = process.argv[2];
if (!archive) {
  process.stderr.write('usage: node release/image-index.ts <OCI archive>\n');
  process.exit(2);
}
const index = await readImageIndex(archive);
process.stdout.write(`image ${index.ref}  ${index.digest}\n`);
for (const { platform, digest, size } of index.platforms)
  process.stdout.write(`  ${platform.padEnd(12)} ${digest}  (manifest, ${size} bytes)\n`);
