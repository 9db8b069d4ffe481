// The file-system calls the agent's modules make, from node:fs's callback API. Not an ES import of node:fs or
// node:fs/promises: an ES import of a built-in evaluates every export, and node:fs's lazy `promises` export
// loads fs/promises, readline and the REPL's history module, 0.9 MiB of resident memory the agent would hold
// for nothing (docs/adr/0006). getBuiltinModule hands over node:fs's own object without touching its getters.

const fs = process.getBuiltinModule('node:fs');
const { promisify } = process.getBuiltinModule('node:util');

export const { constants, existsSync, readFileSync } = fs;

export const access = promisify(fs.access);
export const close = promisify(fs.close);
export const fstat = promisify(fs.fstat);
export const lstat = promisify(fs.lstat);
export const open = promisify(fs.open);
export const read = promisify(fs.read);
export const readdir = promisify(fs.readdir);
export const readFile = promisify(fs.readFile);
export const realpath = promisify(fs.realpath);
export const stat = promisify(fs.stat);
