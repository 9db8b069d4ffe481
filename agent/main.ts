#!/usr/bin/env node
// nodecare-agent entry point: checks the Node.js version before the program is loaded
// (lib/node-version.ts), applies the runtime flags (./runtime-flags.ts, which may replace the process with
// itself plus the flags), then runs agent/start.ts. Each in its own import: a static import of start.ts
// would have the first process load and link the whole program before the re-exec (the controller's first
// process took 160–240 ms until the re-exec that way, 80–100 ms this way, measured 2026-11-29 on a busy
// 2-core machine).

import { requireNodeVersion } from '../lib/node-version.ts';

requireNodeVersion('nodecare-agent');
await import('./runtime-flags.ts');
await import('./start.ts');
