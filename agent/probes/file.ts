// file probe (docs/design.md section 3): the path exists; optionally its mtime is at most `maxAgeSeconds` old (a heartbeat
// file, measured against the agent's clock) and its first 64 KiB match `contentRegex`. Only "matched" or
// "did not match" is reported, never content. A path from a node annotation (never with contentRegex) is
// resolved and confined to the allowed directories first (confine.ts), then looked at without following a
// link: the resolved path had none left.

import { lstat, stat } from '../../lib/fs.ts';
import { ProbeReason } from '../../api/reasons.ts';
import { capInput } from '../../api/text.ts';
import { confinePath } from './confine.ts';
import { readHead } from './read-head.ts';
import { errorCode, fileError, healthy, timedOut, unhealthy } from './result.ts';
import type { Probe } from './types.ts';

export const MAX_CONTENT_BYTES = 64 * 1024;

export const fileProbe: Probe<'file'> = async (spec, ctx) => {
  const shown = capInput(spec.path);
  const confined = await confinePath(spec.path, spec.confineTo);
  if (!confined.ok) return confined.result;
  let mtimeMs: number;
  try {
    mtimeMs = (await (spec.confineTo ? lstat : stat)(confined.path)).mtimeMs;
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return unhealthy(ProbeReason.FileMissing, `${shown} does not exist`);
    return fileError(shown, err);
  }
  const facts = [`${shown} exists`];
  if (spec.maxAgeSeconds !== undefined) {
    const ageSeconds = Math.max(0, Math.floor((ctx.now() - mtimeMs) / 1000));
    if (ageSeconds > spec.maxAgeSeconds) {
      return unhealthy(
        ProbeReason.FileStale,
        `${shown} modified ${ageSeconds}s ago, want at most ${spec.maxAgeSeconds}s`,
      );
    }
    facts.push(`modified ${ageSeconds}s ago`);
  }
  if (spec.contentRegex !== undefined) {
    let content: Buffer;
    try {
      content = await readHead(confined.path, MAX_CONTENT_BYTES);
    } catch (err) {
      return fileError(shown, err);
    }
    if (ctx.signal.aborted) return timedOut(ctx);
    if (!new RegExp(spec.contentRegex).test(content.toString('utf8'))) {
      return unhealthy(ProbeReason.ContentMismatch, `${shown} content did not match`);
    }
    facts.push('content matched');
  }
  return healthy(facts.join(', '));
};
