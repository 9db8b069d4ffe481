// Writes a component's OCI image archive (upstream.ts says what goes in) into its build directory:
//   node image.ts <component> <build directory>
// build.sh runs it once the binaries are there.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeOciArchive } from '../oci.ts';
import { upstreamImage, type UpstreamComponent } from './upstream.ts';

const [component, dir] = process.argv.slice(2) as [UpstreamComponent, string];
const moduleDir = readFileSync(join(dir, 'module-dir'), 'utf8').trim();
const written = await writeOciArchive(join(dir, 'image.oci.tar'), upstreamImage(component, dir, moduleDir));
process.stderr.write(`[upstream] [${component}] image ${written.name} (${written.digest.slice(0, 19)})\n`);
