#!/usr/bin/env node
// nodecare-controller entry point: checks the Node.js version before the program is loaded (lib/node-version.ts),
// then runs controller/start.ts.

import { requireNodeVersion } from '../lib/node-version.ts';

requireNodeVersion('nodecare-controller');
await import('./start.ts');
