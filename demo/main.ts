#!/usr/bin/env node
// nodecare demo (npm start) entry point: checks the Node.js version before the program is loaded (lib/node-version.ts),
// then runs demo/start.ts.

import { requireNodeVersion } from '../lib/node-version.ts';

requireNodeVersion('nodecare demo (npm start)');
await import('./start.ts');
