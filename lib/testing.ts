// Test helpers shared by unit and integration tests (not part of the build).

import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

/**
 * A self-signed EC certificate for 127.0.0.1 (key.pem and cert.pem in `dir`, made by the real openssl), for
 * TLS servers on loopback in tests.
 */
export async function selfSignedCert(dir: string): Promise<{ key: Buffer; cert: Buffer }> {
  const keyPath = join(dir, 'key.pem');
  const certPath = join(dir, 'cert.pem');
  await promisify(execFile)('openssl', [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-days',
    '1',
    '-subj',
    '/CN=127.0.0.1',
    '-addext',
    'subjectAltName=IP:127.0.0.1',
    '-keyout',
    keyPath,
    '-out',
    certPath,
  ]);
  const [key, cert] = await Promise.all([readFile(keyPath), readFile(certPath)]);
  return { key, cert };
}

/**
 * The top-level keys that occur more than once in one JSON object line. JSON.parse would silently keep the
 * last value; a log pipeline may keep either, so a log line must never repeat a key.
 */
export function duplicateKeys(line: string): string[] {
  const seen = new Set<string>();
  const duplicates: string[] = [];
  let depth = 0;
  let expectKey = false;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i];
    if (ch === '"') {
      let end = i + 1;
      while (end < line.length && line[end] !== '"') end += line[end] === '\\' ? 2 : 1;
      if (depth === 1 && expectKey) {
        const key = JSON.parse(line.slice(i, end + 1)) as string;
        if (seen.has(key)) duplicates.push(key);
        seen.add(key);
        expectKey = false;
      }
      i = end;
    } else if (ch === '{' || ch === '[') {
      depth++;
      expectKey = ch === '{' && depth === 1;
    } else if (ch === '}' || ch === ']') {
      depth--;
    } else if (ch === ',' && depth === 1) {
      expectKey = true;
    }
  }
  return duplicates;
}
