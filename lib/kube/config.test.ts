import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConnection } from './config.ts';

let dir: string;

function kubeconfig(server: string): string {
  return JSON.stringify({
    clusters: [{ name: 'c', cluster: { server } }],
    users: [{ name: 'u', user: { token: 't' } }],
    contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
    'current-context': 'x',
  });
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'nodecare-kubeconfig-'));
  await mkdir(join(dir, 'home', '.kube'), { recursive: true });
  await mkdir(join(dir, 'empty-home'));
  await writeFile(join(dir, 'home', '.kube', 'config'), kubeconfig('https://home.example:6443'));
  await writeFile(join(dir, 'flag'), kubeconfig('https://flag.example:6443'));
  await writeFile(join(dir, 'env'), kubeconfig('https://env.example:6443'));
});

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('loadConnection', () => {
  it.each([
    { behaviour: 'the flag wins over everything', flag: 'flag', kubeconfigEnv: 'env', server: 'flag' },
    { behaviour: 'KUBECONFIG wins over ~/.kube/config', flag: '', kubeconfigEnv: 'env', server: 'env' },
    {
      behaviour: 'KUBECONFIG: a missing file of the list is skipped',
      flag: '',
      kubeconfigEnv: ['missing', 'env'],
      server: 'env',
    },
    { behaviour: 'neither → ~/.kube/config', flag: '', kubeconfigEnv: '', server: 'home' },
  ])('$behaviour', async ({ flag, kubeconfigEnv, server }) => {
    const list = [kubeconfigEnv].flat().filter(Boolean);
    const env = list.length ? { KUBECONFIG: list.map((f) => join(dir, f)).join(delimiter) } : {};
    const connection = await loadConnection(flag && join(dir, flag), env, join(dir, 'home'));
    expect(connection.server).toBe(`https://${server}.example:6443`);
  });

  it('nothing to load outside a cluster → an error naming every place it looked', async () => {
    await expect(loadConnection(undefined, {}, join(dir, 'empty-home'))).rejects.toThrow(
      `no kubeconfig: pass --kubeconfig, set KUBECONFIG, create ${join(dir, 'empty-home', '.kube', 'config')}, or run in a cluster`,
    );
  });
});

describe('loadConnection with a context (kubectl --context)', () => {
  it('uses the named context instead of the current one, and names a context that is not there', async () => {
    const path = join(dir, 'two-contexts');
    await writeFile(
      path,
      JSON.stringify({
        clusters: [
          { name: 'prod', cluster: { server: 'https://prod.example:6443' } },
          { name: 'dev', cluster: { server: 'https://dev.example:6443' } },
        ],
        users: [{ name: 'u', user: { token: 't' } }],
        contexts: [
          { name: 'prod', context: { cluster: 'prod', user: 'u' } },
          { name: 'dev', context: { cluster: 'dev', user: 'u' } },
        ],
        'current-context': 'prod',
      }),
    );
    const env = { KUBECONFIG: path };
    expect((await loadConnection(undefined, env, join(dir, 'empty-home'))).server).toBe(
      'https://prod.example:6443',
    );
    const dev = await loadConnection(undefined, env, join(dir, 'empty-home'), 'dev');
    expect(dev.server).toBe('https://dev.example:6443');
    expect(dev.source).toBe(`kubeconfig ${path} context dev`);
    await expect(loadConnection(path, {}, join(dir, 'empty-home'), 'staging')).rejects.toThrow(
      `kubeconfig ${path}: context "staging" not found`,
    );
  });
});

describe('loadConnection with KUBECONFIG naming several files (merged as kubectl merges them)', () => {
  it('takes the current-context of the first file that sets one, and contexts, clusters and users from any file, the first definition of a name winning', async () => {
    const first = join(dir, 'merge-first');
    const second = join(dir, 'merge-second');
    await mkdir(join(dir, 'certs'), { recursive: true });
    await writeFile(join(dir, 'certs', 'token'), 'from-file\n');
    await writeFile(
      first,
      JSON.stringify({
        clusters: [{ name: 'shared', cluster: { server: 'https://first.example:6443' } }],
        users: [{ name: 'shared-user', user: { token: 'first' } }],
        contexts: [{ name: 'one', context: { cluster: 'shared', user: 'shared-user' } }],
        'current-context': 'one',
      }),
    );
    await writeFile(
      second,
      JSON.stringify({
        clusters: [
          { name: 'shared', cluster: { server: 'https://second.example:6443' } },
          { name: 'staging', cluster: { server: 'https://staging.example:6443' } },
        ],
        // A relative path is relative to the file that holds it.
        users: [{ name: 'staging-user', user: { tokenFile: 'certs/token' } }],
        contexts: [{ name: 'staging', context: { cluster: 'staging', user: 'staging-user' } }],
        'current-context': 'staging',
      }),
    );
    const env = { KUBECONFIG: [first, join(dir, 'missing'), second].join(delimiter) };
    const current = await loadConnection(undefined, env, join(dir, 'empty-home'));
    expect(current.server).toBe('https://first.example:6443');
    expect(await current.authHeaders()).toEqual({ authorization: 'Bearer first' });
    const staging = await loadConnection(undefined, env, join(dir, 'empty-home'), 'staging');
    expect(staging.server).toBe('https://staging.example:6443');
    expect(await staging.authHeaders()).toEqual({ authorization: 'Bearer from-file' });
    expect(staging.source).toBe(`kubeconfig ${first}${delimiter}${second} context staging`);
  });

  it('a server that is not an http(s) URL → a kubeconfig error naming it, not a network error later', async () => {
    const path = join(dir, 'no-scheme');
    await writeFile(path, kubeconfig('localhost:6443'));
    await expect(loadConnection(path, {}, join(dir, 'empty-home'))).rejects.toThrow(
      `kubeconfig ${path}: cluster "c" has server "localhost:6443", which is not an https:// URL`,
    );
  });

  it('an exec credential plugin of a context from the second file runs and authenticates', async () => {
    const plugin = join(dir, 'credential-plugin');
    await writeFile(
      plugin,
      '#!/bin/sh\necho \'{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"from-plugin"}}\'\n',
      { mode: 0o755 },
    );
    const second = join(dir, 'exec-second');
    await writeFile(
      second,
      JSON.stringify({
        clusters: [{ name: 'exec', cluster: { server: 'https://exec.example:6443' } }],
        users: [
          {
            name: 'exec-user',
            user: {
              exec: {
                apiVersion: 'client.authentication.k8s.io/v1',
                command: plugin,
                interactiveMode: 'Never',
              },
            },
          },
        ],
        contexts: [{ name: 'exec', context: { cluster: 'exec', user: 'exec-user' } }],
      }),
    );
    const env = { KUBECONFIG: [join(dir, 'env'), second].join(delimiter) };
    const connection = await loadConnection(undefined, env, join(dir, 'empty-home'), 'exec');
    expect(connection.server).toBe('https://exec.example:6443');
    expect(await connection.authHeaders()).toEqual({ Authorization: 'Bearer from-plugin' });
  });
});
