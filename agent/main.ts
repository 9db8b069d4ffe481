#!/usr/bin/env node
// nodecare-agent entry point: checks the Node.js version before the program is loaded (lib/node-version.ts),
// then runs agent/start.ts.

import { requireNodeVersion } from '../lib/node-version.ts';

requireNodeVersion('nodecare-agent');
await import('./start.ts');
