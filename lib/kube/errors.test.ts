// Transport failures are classified once (errors.ts): only a failure with a network or TLS code is Network;
// anything else (regression: undici's TypeError on Node 20 read "cannot reach the API server … check your
// network") is a Client error that keeps its cause.

import { describe, expect, it } from 'vitest';
import { classifyTransportError, KubeErrorCode } from './errors.ts';

const withCode = (message: string, code: string): Error => Object.assign(new Error(message), { code });

describe('classifyTransportError', () => {
  it.each([
    [
      'refused connection → Network',
      withCode('connect ECONNREFUSED 127.0.0.1:6443', 'ECONNREFUSED'),
      KubeErrorCode.Network,
    ],
    [
      'unknown host → Network',
      withCode('getaddrinfo ENOTFOUND api.example', 'ENOTFOUND'),
      KubeErrorCode.Network,
    ],
    ['reset → Network', withCode('read ECONNRESET', 'ECONNRESET'), KubeErrorCode.Network],
    [
      'undici socket closed → Network',
      withCode('other side closed', 'UND_ERR_SOCKET'),
      KubeErrorCode.Network,
    ],
    [
      'stream closed early → Network',
      withCode('Premature close', 'ERR_STREAM_PREMATURE_CLOSE'),
      KubeErrorCode.Network,
    ],
    [
      'untrusted certificate → Network',
      withCode('self-signed certificate', 'DEPTH_ZERO_SELF_SIGNED_CERT'),
      KubeErrorCode.Network,
    ],
    [
      'wrong host name in certificate → Network',
      withCode('Hostname/IP does not match', 'ERR_TLS_CERT_ALTNAME_INVALID'),
      KubeErrorCode.Network,
    ],
    [
      'network code on the cause → Network',
      Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } }),
      KubeErrorCode.Network,
    ],
    ['abort → Timeout', { name: 'AbortError', message: 'aborted' }, KubeErrorCode.Timeout],
    ['deadline → Timeout', { name: 'TimeoutError', message: 'timed out' }, KubeErrorCode.Timeout],
    [
      'undici headers timeout → Timeout',
      withCode('Headers Timeout Error', 'UND_ERR_HEADERS_TIMEOUT'),
      KubeErrorCode.Timeout,
    ],
    [
      "TypeError in the HTTP client (undici's zstd on Node 20) → Client",
      new TypeError("Cannot read properties of undefined (reading 'bind')"),
      KubeErrorCode.Client,
    ],
    ['malformed server URL → Client', withCode('Invalid URL', 'ERR_INVALID_URL'), KubeErrorCode.Client],
    ['a thrown string → Client', 'boom', KubeErrorCode.Client],
  ])('%s', (_name, err, code) => {
    expect(classifyTransportError(err, 'GET /api/v1/nodes').code).toBe(code);
  });

  it('a Client error names what failed, keeps the original as its cause and is not retried', () => {
    const original = new TypeError("Cannot read properties of undefined (reading 'bind')");
    const err = classifyTransportError(original, 'GET /api/v1/nodes');
    expect(err.message).toBe(
      "GET /api/v1/nodes: TypeError Cannot read properties of undefined (reading 'bind')",
    );
    expect(err.cause).toBe(original);
    expect(err.retryable).toBe(false);
  });
});
