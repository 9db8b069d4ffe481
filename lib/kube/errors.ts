// Kubernetes API errors are classified once, here, at the boundary (docs/conventions.md 11): business code sees a
// stable `code`, never an HTTP status or a transport exception.

export const KubeErrorCode = {
  NotFound: 'NotFound',
  Conflict: 'Conflict',
  AlreadyExists: 'AlreadyExists',
  Gone: 'Gone',
  TooManyRequests: 'TooManyRequests',
  Unauthorized: 'Unauthorized',
  Forbidden: 'Forbidden',
  Invalid: 'Invalid',
  ServerError: 'ServerError',
  Timeout: 'Timeout',
  Network: 'Network',
  /** A response we cannot read (a watch line that is not JSON or is over the size limit). */
  Malformed: 'Malformed',
  /** A successful response larger than the caller would read (RequestOptions.maxBodyBytes): not read on. */
  TooLarge: 'TooLarge',
  /**
   * The request failed in this process, not on the network nor at the server: a failure with no network or
   * TLS error code (a TypeError inside the HTTP client on an unsupported Node.js, a malformed server URL).
   * Never reported as a network problem; not retryable.
   */
  Client: 'Client',
} as const;
export type KubeErrorCode = (typeof KubeErrorCode)[keyof typeof KubeErrorCode];

export class KubeError extends Error {
  readonly code: KubeErrorCode;
  /** HTTP status, or 0 when the request never got an answer. */
  readonly status: number;
  /** From Retry-After on 429/503, in ms. */
  readonly retryAfterMs: number | undefined;

  constructor(code: KubeErrorCode, status: number, message: string, retryAfterMs?: number) {
    super(message);
    this.name = 'KubeError';
    this.code = code;
    this.status = status;
    this.retryAfterMs = retryAfterMs;
  }

  /** Worth retrying with backoff: the same request may succeed later. */
  get retryable(): boolean {
    return (
      this.code === KubeErrorCode.TooManyRequests ||
      this.code === KubeErrorCode.ServerError ||
      this.code === KubeErrorCode.Timeout ||
      this.code === KubeErrorCode.Network
    );
  }
}

export function isKubeError(err: unknown, code?: KubeErrorCode): err is KubeError {
  return err instanceof KubeError && (code === undefined || err.code === code);
}

/** A Status body, as much of it as classifyResponse reads (JSON's shape; protobuf.ts decodes the same). */
export interface StatusBody {
  message?: string;
  reason?: string;
  details?: { retryAfterSeconds?: number };
}

/** Maps an HTTP error answer (status, parsed Status body, Retry-After) to a KubeError. */
export function classifyResponse(
  status: number,
  body: unknown,
  retryAfterHeader: string | undefined,
  what: string,
): KubeError {
  const statusBody = (typeof body === 'object' && body !== null ? body : {}) as StatusBody;
  const message = `${what}: ${status} ${statusBody.message ?? statusBody.reason ?? 'error'}`;
  const retryAfterSeconds = Number(retryAfterHeader ?? statusBody.details?.retryAfterSeconds);
  const retryAfterMs =
    Number.isFinite(retryAfterSeconds) && retryAfterSeconds > 0 ? retryAfterSeconds * 1000 : undefined;
  switch (status) {
    case 401:
      return new KubeError(KubeErrorCode.Unauthorized, status, message);
    case 403:
      return new KubeError(KubeErrorCode.Forbidden, status, message);
    case 404:
      return new KubeError(KubeErrorCode.NotFound, status, message);
    case 409:
      return new KubeError(
        statusBody.reason === 'AlreadyExists' ? KubeErrorCode.AlreadyExists : KubeErrorCode.Conflict,
        status,
        message,
      );
    case 410:
      return new KubeError(KubeErrorCode.Gone, status, message);
    case 422:
    case 400:
      return new KubeError(KubeErrorCode.Invalid, status, message);
    case 429:
      return new KubeError(KubeErrorCode.TooManyRequests, status, message, retryAfterMs ?? 1000);
    case 408:
    case 504:
      return new KubeError(KubeErrorCode.Timeout, status, message, retryAfterMs);
    default:
      return new KubeError(
        status >= 500 ? KubeErrorCode.ServerError : KubeErrorCode.Invalid,
        status,
        message,
        retryAfterMs,
      );
  }
}

/**
 * Error codes of a request that failed on its way: the operating system's (`ECONNREFUSED`, `ENOTFOUND`,
 * `ECONNRESET`, `EPIPE`, `ETIMEDOUT`, …), a connection closed under a stream, undici's socket errors, and TLS
 * (handshake, certificate verification).
 */
const NETWORK_CODE =
  /^(E[A-Z0-9]+|ERR_STREAM_PREMATURE_CLOSE|UND_ERR_(SOCKET|CLOSED|DESTROYED|CONNECT_TIMEOUT)|ERR_TLS_\w+|ERR_SSL_\w+|\w*CERT\w*|UNABLE_TO_\w+|HOSTNAME_MISMATCH)$/;

/**
 * Maps a transport failure (abort, refused, reset, TLS) to a KubeError. Anything else (no network code: a bug,
 * a runtime the client does not support) is a `Client` error carrying the original as its cause, never
 * `Network`: "check your network" would send the reader the wrong way.
 */
export function classifyTransportError(err: unknown, what: string): KubeError {
  if (err instanceof KubeError) return err;
  const e = err as {
    name?: string;
    code?: unknown;
    message?: string;
    cause?: { code?: unknown; message?: string };
  };
  const name = e?.name ?? '';
  const codes = [e?.code, e?.cause?.code].filter((c): c is string => typeof c === 'string');
  if (
    name === 'TimeoutError' ||
    name === 'AbortError' ||
    codes.includes('UND_ERR_HEADERS_TIMEOUT') ||
    codes.includes('UND_ERR_BODY_TIMEOUT')
  ) {
    return new KubeError(KubeErrorCode.Timeout, 0, `${what}: timed out`);
  }
  const network = codes.find((c) => NETWORK_CODE.test(c));
  if (network) {
    return new KubeError(KubeErrorCode.Network, 0, `${what}: ${network} ${e?.message ?? ''}`.trim());
  }
  const failure = new KubeError(
    KubeErrorCode.Client,
    0,
    `${what}: ${[codes[0], name, e?.message].filter(Boolean).join(' ') || String(err)}`,
  );
  failure.cause = err;
  return failure;
}
