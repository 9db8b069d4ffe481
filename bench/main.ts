#!/usr/bin/env node
// nodecare benchmark (npm run bench) entry point: checks the Node.js version before the program is loaded (lib/node-version.ts),
// then runs bench/start.ts.

import { requireNodeVersion } from '../lib/node-version.ts';

requireNodeVersion('nodecare benchmark (npm run bench)');
await import('./start.ts');
