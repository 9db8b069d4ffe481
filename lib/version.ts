// The version a program reports (--version, the start-up log): nodecare's package.json, found upward from
// this file so that it works from the sources and from the build in dist/ alike.

import { readFileSync } from './fs.ts';
import { dirname, join } from 'node:path';

let cached: string | undefined;

export function packageVersion(): string {
  if (cached !== undefined) return cached;
  for (let dir = import.meta.dirname; ; dir = dirname(dir)) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
        name?: string;
        version?: string;
      };
      if (pkg.name === 'nodecare' && pkg.version) return (cached = pkg.version);
    } catch {
      // no package.json here: look further up
    }
    if (dirname(dir) === dir) return (cached = 'unknown');
  }
}
