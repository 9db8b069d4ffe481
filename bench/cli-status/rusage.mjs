// Loaded with `node --import` into each measured kubectl-nodecare process (bench/cli-status/run.ts): at exit it
// writes the process's own resource usage (maxRSS in KiB, CPU in µs) to the file NODECARE_BENCH_RUSAGE names.
import { writeFileSync } from 'node:fs';
import process from 'node:process';

const out = process.env.NODECARE_BENCH_RUSAGE;
if (out) process.on('exit', () => writeFileSync(out, JSON.stringify(process.resourceUsage())));
