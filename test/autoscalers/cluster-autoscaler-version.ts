// Which Cluster Autoscaler the test runs: the binary has no --version flag, but with --v=1 or more it logs
// its version first thing at start (klog), e.g.
//   I1124 13:48:16.291483   15271 main.go:250] Cluster Autoscaler 1.36.1
// docs/autoscalers.md states the version its results come from ("Cluster Autoscaler 1.36.1"); the test
// checks that the binary it ran is that one.

/** The klog line the Cluster Autoscaler writes at start with --v=1 or more. */
const LOGGED =
  /^I\d{4} \d{2}:\d{2}:\d{2}\.\d+\s+\d+ [\w.-]+:\d+\] Cluster Autoscaler (v?\d+\.\d+\.\d+\S*)\s*$/m;
/** How docs/autoscalers.md names a Cluster Autoscaler release. */
const DOCUMENTED = /Cluster Autoscaler (\d+\.\d+\.\d+)\b/g;

/** The version in the autoscaler's start line, or undefined while the log has no such line. */
export function loggedVersion(log: string): string | undefined {
  return LOGGED.exec(log)?.[1];
}

/** The one Cluster Autoscaler version docs/autoscalers.md states; throws when it states none or several. */
export function documentedVersion(docs: string): string {
  const versions = new Set([...docs.matchAll(DOCUMENTED)].map((m) => m[1]!));
  if (versions.size !== 1) {
    throw new Error(
      `docs/autoscalers.md must state exactly one Cluster Autoscaler version ("Cluster Autoscaler X.Y.Z"), found ${
        versions.size === 0 ? 'none' : [...versions].join(', ')
      }`,
    );
  }
  return [...versions][0]!;
}

/** Checks the autoscaler's log against the docs; returns the version, throws naming both when they differ. */
export function checkVersion(log: string, docs: string): string {
  const documented = documentedVersion(docs);
  const logged = loggedVersion(log);
  if (logged === undefined) {
    throw new Error(
      `the Cluster Autoscaler logged no "Cluster Autoscaler <version>" line at start (is it run with --v=1 or more?); docs/autoscalers.md states ${documented}`,
    );
  }
  if (logged !== documented) {
    throw new Error(
      `the Cluster Autoscaler binary is ${logged}, docs/autoscalers.md states ${documented}: run the test with a ${documented} binary, or rerun it with ${logged} and update the docs' results and version`,
    );
  }
  return logged;
}
