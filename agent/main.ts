#!/usr/bin/env node
// nodecare-agent entry point: checks the Node.js version before the program is loaded
// (lib/node-version.ts), applies the runtime flags (./runtime-flags.ts, which may replace the process with
// itself plus the flags), then runs agent/start.ts. Each in its own import: a static import of start.ts
// would have the first process load and link the whole program before the re-exec (measured: docs/adr/0017).

import { requireNodeVersion } from '../lib/node-version.ts';

requireNodeVersion('nodecare-agent');
await import('./runtime-flags.ts');
await import('./start.ts');
