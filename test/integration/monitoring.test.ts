// manifests/monitoring/: the Prometheus alert rules pass `promtool check rules`, their expressions pass the
// unit tests in nodecare.rules.test.yaml (`promtool test rules`), and every nodecare metric the rules and the
// Grafana dashboard query is one the real programs export (scraped from a controller and an agent running
// against the real control plane), and their feature gauges say what this version's API server serves.
// promtool is built from the Go module proxy by test/tools/build-promtool.sh (cached); a failed build fails
// this file, it never skips. The scraped output also passes `promtool check metrics`, and an agent's is few
// series, none of them runtime metrics or carrying a node name (issue 51 item 6).

import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { lintMetrics } from '../../lib/metrics-lint.ts';
import { CoreV1Api } from '@kubernetes/client-node';
import { EXTENSION_ANNOTATION_PREFIX } from '../../api/index.ts';
import { FAST_PROBING, adminKubeConfig, eventually, kubernetesMinor, uniqueName } from './helpers.ts';
import { startAgent, startProgram } from './processes.ts';
import { applyBaseManifests } from './setup.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const MONITORING = join(ROOT, 'manifests', 'monitoring');
const RULES = join(MONITORING, 'nodecare.rules.yaml');
const DASHBOARD = join(MONITORING, 'nodecare-dashboard.json');
const core = adminKubeConfig().makeApiClient(CoreV1Api);
let promtool = '';

function run(
  command: string,
  args: string[],
  onStderr?: (line: string) => void,
  stdin?: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: MONITORING, stdio: ['pipe', 'pipe', 'pipe'] });
    child.stdin.end(stdin ?? '');
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      if (onStderr) for (const line of d.toString().split('\n').filter(Boolean)) onStderr(line);
    });
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

beforeAll(async () => {
  // Builds promtool on first use (several minutes cold); progress goes to stderr.
  const built = await run('bash', [join(ROOT, 'test', 'tools', 'build-promtool.sh')], (line) =>
    process.stderr.write(`${line}\n`),
  );
  if (built.code !== 0) throw new Error(`test/tools/build-promtool.sh failed:\n${built.stderr}`);
  promtool = built.stdout.trim().split('\n').pop() ?? '';
}, 1_500_000);

/** Every nodecare_* metric name in a PromQL text (histogram series suffixes stripped). */
function metricNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const m of text.matchAll(/\bnodecare_[a-z0-9_]+/g)) {
    names.add(m[0].replace(/_(bucket|sum|count)$/, ''));
  }
  return names;
}

/** The series of an exposition (its sample lines). */
const samples = (exposition: string): string[] =>
  exposition.split('\n').filter((line) => line !== '' && !line.startsWith('#'));

/** Metric family names in an exposition. */
function exported(exposition: string): Set<string> {
  return new Set([...exposition.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1] as string));
}

describe('manifests/monitoring', () => {
  it('promtool check rules accepts the alert rules', async () => {
    const result = await run(promtool, ['check', 'rules', RULES]);
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toContain('SUCCESS: 7 rules found');
  });

  it('promtool test rules passes the unit tests of every alert expression', async () => {
    const result = await run(promtool, ['test', 'rules', 'nodecare.rules.test.yaml']);
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toContain('SUCCESS');
    const tested = readFileSync(join(MONITORING, 'nodecare.rules.test.yaml'), 'utf8');
    for (const alert of readFileSync(RULES, 'utf8').matchAll(/- alert: (\S+)/g)) {
      expect(tested, `no unit test for ${alert[1]}`).toContain(`alertname: ${alert[1]}`);
    }
  });

  it('the dashboard is valid Grafana JSON whose panels query metrics the programs export', async () => {
    const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as {
      title: string;
      uid: string;
      panels: Array<{ title: string; targets?: Array<{ expr: string }> }>;
    };
    expect(dashboard.uid).toBe('nodecare');
    const exprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));
    expect(exprs.length).toBeGreaterThan(5);

    await applyBaseManifests();
    const kubeconfig = inject('kubeconfig');
    const controller = startProgram('controller', [
      `--kubeconfig=${kubeconfig}`,
      '--health-port=0',
      `--identity=${uniqueName('monitoring')}`,
      '--leader-elect=false',
    ]);
    // A node that requires one extension (an http probe of the controller's /healthz), so that the agent's
    // per-extension and per-probe-kind series are there when counted.
    const nodeName = uniqueName('monitoring-node');
    const started = await controller.waitForLog('Started nodecare-controller');
    const extension = { probe: { http: { url: `http://127.0.0.1:${started.port as number}/healthz` } } };
    await core.createNode({
      body: {
        metadata: {
          name: nodeName,
          annotations: {
            [`${EXTENSION_ANNOTATION_PREFIX}web`]: JSON.stringify({ ...extension, ...FAST_PROBING }),
          },
        },
      },
    });
    const agent = await startAgent({ kubeconfig, nodeName });
    try {
      const scrape = async (port: number) => (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      const agentText = await eventually(
        async () => {
          const text = await scrape(agent.healthPort);
          return /^nodecare_agent_extension_state\{extension="web",state="Healthy"\} 1$/m.test(text) &&
            /^nodecare_agent_probe_duration_seconds_count\{kind="http"\} [1-9]/m.test(text)
            ? text
            : undefined;
        },
        { what: 'the agent to probe web Healthy' },
      );
      const controllerText = await scrape(started.port as number);
      // Issue 51 item 6: without --runtime-metrics an agent serves no process_* or nodejs_* series, few series
      // in all (docs/agent.md, "Metrics", states the count), and none with a node name.
      expect(agentText).not.toMatch(/^(process|nodejs)_/m);
      expect(samples(agentText).length, samples(agentText).join('\n')).toBeLessThan(40);
      expect(agentText).not.toMatch(/[{,](node|node_name|nodename|hostname|instance)="/);
      expect(agentText).not.toContain(nodeName);
      expect(lintMetrics(agentText, 'nodecare_agent_')).toEqual([]);
      // The controller keeps them.
      expect(controllerText).toMatch(/^process_resident_memory_bytes \d/m);
      // Prometheus's own linter on both programs' real output.
      for (const [program, text] of [
        ['agent', agentText],
        ['controller', controllerText],
      ] as const) {
        const checked = await run(promtool, ['check', 'metrics'], undefined, text);
        expect(checked.code, `promtool check metrics, ${program}: ${checked.stdout}${checked.stderr}`).toBe(
          0,
        );
      }
      expect(lintMetrics(controllerText, 'nodecare_controller_')).toEqual([]);
      expect(controllerText).toMatch(
        /^nodecare_controller_build_info\{version="[^"]+",nodejs_version="v[^"]+"\} 1$/m,
      );
      expect(agentText).toMatch(/^nodecare_agent_build_info\{version="[^"]+",nodejs_version="v[^"]+"\} 1$/m);
      // The feature check at start (lib/kube/features.ts), as this version serves each API (docs/compatibility.md).
      const minor = kubernetesMinor();
      const gauge = (prefix: string, feature: string, served: boolean) =>
        `${prefix}_feature_available{feature="${feature}"} ${served ? 1 : 0}`;
      const controllerFeatures = [
        gauge('nodecare_controller', 'resourceSlices', minor >= 34),
        gauge('nodecare_controller', 'validatingAdmissionPolicy', minor >= 30),
        gauge('nodecare_controller', 'mutatingAdmissionPolicy', minor >= 36),
      ];
      const featureLines = async (port: number, prefix: string) =>
        (await scrape(port)).split('\n').filter((l) => l.startsWith(`${prefix}_feature_available{`));
      await eventually(
        async () =>
          (await featureLines(started.port as number, 'nodecare_controller')).sort().join() ===
            [...controllerFeatures].sort().join() || undefined,
        { what: `the controller's ${controllerFeatures.join(', ')}` },
      );
      await eventually(
        async () =>
          (await featureLines(agent.healthPort, 'nodecare_agent')).join() ===
            gauge('nodecare_agent', 'resourceSlices', minor >= 34) || undefined,
        { what: "the agent's feature gauge" },
      );
      const available = new Set([...exported(controllerText), ...exported(agentText)]);
      const queried = metricNames([readFileSync(RULES, 'utf8'), ...exprs].join('\n'));
      for (const name of queried) expect(available, `${name} is queried but not exported`).toContain(name);
    } finally {
      await Promise.all([controller.kill(), agent.kill()]);
      await core.deleteNode({ name: nodeName }).catch(() => undefined);
    }
  });
});
