// The order of the real-node suite's files: vitest's own order (failed first, then longest first, or largest
// first without results), but the upstream extensions' files (upstream-*.test.ts) last, by name. Those share
// one nodecare install: the first installs it as shipped, each leaves it installed for the next (installing
// again only re-applies the same objects), and the suite's teardown removes the whole cluster. The other
// files install and uninstall nodecare themselves, so none of them may run after an upstream file.

import { basename } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

const isUpstream = (spec: TestSpecification): boolean =>
  spec.project.name === 'realnodes' && basename(spec.moduleId).startsWith('upstream-');

export class RealNodesSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const upstream = sorted.filter(isUpstream).sort((a, b) => (a.moduleId < b.moduleId ? -1 : 1));
    if (upstream.length === 0) return sorted;
    const rest = sorted.filter((spec) => !isUpstream(spec));
    // Right after the suite's other files: projects run one after another, in the order the base gave.
    const lastRealNodes = rest.findLastIndex((spec) => spec.project.name === 'realnodes');
    const at = lastRealNodes >= 0 ? lastRealNodes + 1 : rest.findIndex((s) => s.project.name > 'realnodes');
    const index = at < 0 ? rest.length : at;
    return [...rest.slice(0, index), ...upstream, ...rest.slice(index)];
  }
}
