// The Node.js version every nodecare program needs, checked before anything that depends on it is loaded:
// an older Node fails later and misleadingly (undici's zstd decoder, Node >= 22.19, shows up as "cannot reach
// the API server"; type stripping of the sources, Node >= 22.18). Entry points import only this module, call
// requireNodeVersion, then import the program dynamically. No imports here: it must load on any Node.

/** The one minimum; package.json's `engines.node` says the same (test/unit/node-version.test.ts). */
export const MINIMUM_NODE_VERSION = '24.0.0';

function parts(version: string): number[] | undefined {
  const match = /^v?(\d+)\.(\d+)\.(\d+)/.exec(version);
  return match ? match.slice(1, 4).map(Number) : undefined;
}

/** Why `program` cannot run on Node `version` (process.version), in one line; undefined when it can. */
export function nodeVersionProblem(program: string, version: string): string | undefined {
  const have = parts(version);
  const need = parts(MINIMUM_NODE_VERSION)!;
  if (have) {
    for (let i = 0; i < 3; i++) {
      if (have[i]! > need[i]!) return undefined;
      if (have[i]! < need[i]!) break;
      if (i === 2) return undefined;
    }
  }
  return (
    `${program} needs Node.js ${MINIMUM_NODE_VERSION} or newer; this is Node.js ${version}. ` +
    'Install Node.js 24 (or run it through npm in the repository, which uses the pinned one).'
  );
}

/** Exits with 2 (the programs' code for "cannot run as asked") and one line on stderr if Node is too old. */
export function requireNodeVersion(program: string): void {
  const problem = nodeVersionProblem(program, process.version);
  if (problem === undefined) return;
  process.stderr.write(`${problem}\n`);
  process.exit(2);
}
