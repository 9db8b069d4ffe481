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
      behaviour: 'KUBECONFIG: the first file of the list that exists',
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
