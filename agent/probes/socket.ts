// The unix socket a gRPC probe dials: confined to the allowed directories when a node annotation registered it
// (confine.ts), and checked for access first, so that "may not open" is told apart from "not there".
//
// Only imports node built-ins and small modules of its own: grpc.test.ts runs it as another user from a copy.

import { access, constants } from '../../lib/fs.ts';
import { ProbeReason } from '../../api/reasons.ts';
import { capInput } from '../../api/text.ts';
import { confinePath, type Confined } from './confine.ts';
import { errorCode, fileError, unhealthy } from './result.ts';

/**
 * The path to dial: confined when registered by an annotation. A missing socket is the extension being down;
 * one we may not open is "could not determine".
 */
export async function openableSocket(
  path: string,
  confineTo: readonly string[] | undefined,
): Promise<Confined> {
  const confined = await confinePath(path, confineTo);
  if (!confined.ok) return confined;
  try {
    await access(confined.path, constants.R_OK | constants.W_OK);
    return confined;
  } catch (err) {
    const shown = capInput(path);
    if (errorCode(err) === 'ENOENT') {
      return { ok: false, result: unhealthy(ProbeReason.ConnectionFailed, `socket ${shown} does not exist`) };
    }
    return { ok: false, result: fileError(`socket ${shown}`, err) };
  }
}
