// What `--help` adds to the option tables (lib/options.ts renders those): each command's examples, as kubectl's
// own help has them, and the wrapping of every help text to the terminal's width, with continuation lines
// indented under the text they continue. cli/help.test.ts runs every example through its command's parser.

/** Each command's examples: a comment line, then the command. */
export const EXAMPLES: Readonly<Record<string, ReadonlyArray<readonly [string, string]>>> = {
  status: [
    ['Every node, worst first, and the ClusterHealth conditions', 'kubectl nodecare status'],
    [
      'The GPU nodes only, with more columns',
      'kubectl nodecare status -l nvidia.com/gpu.present=true -o wide',
    ],
    ['For a script: the same view as JSON', 'kubectl nodecare status -o json'],
  ],
  explain: [
    ['Why node gpu-7 is or is not schedulable', 'kubectl nodecare explain gpu-7'],
    ['The same, with its last 20 events, as YAML', 'kubectl nodecare explain gpu-7 --events=20 -o yaml'],
  ],
  extensions: [
    ['Every extension with its node counts per state', 'kubectl nodecare extensions'],
    ['As JSON, for a script', 'kubectl nodecare extensions -o json'],
  ],
  uninstall: [
    ['Say what uninstalling would remove, and change nothing', 'kubectl nodecare uninstall'],
    [
      'Remove it, for an install in namespace ops-node-health',
      'kubectl nodecare uninstall --yes --namespace=ops-node-health',
    ],
  ],
  completion: [
    ['Completion in the current bash', 'source <(kubectl nodecare completion bash)'],
    ['Completion for every new zsh', 'kubectl nodecare completion zsh > "${fpath[1]}/_kubectl-nodecare"'],
  ],
};

/** The examples section of a command's help, or '' when it has none. */
export function examplesSection(command: string): string {
  const examples = EXAMPLES[command];
  if (!examples?.length) return '';
  // Appended to the option list: a blank line, then the section.
  return ['', '', 'Examples:', ...examples.flatMap(([what, line]) => [`  # ${what}`, `  ${line}`])].join(
    '\n',
  );
}

/** The width help is wrapped to: the terminal's, else $COLUMNS, else 80; never under 40. */
export function helpWidth(
  columns: number | undefined,
  env: Readonly<Record<string, string | undefined>>,
): number {
  const fromEnv = Number.parseInt(env.COLUMNS ?? '', 10);
  const width = columns && columns > 0 ? columns : Number.isFinite(fromEnv) && fromEnv > 0 ? fromEnv : 80;
  return Math.max(40, width);
}

/**
 * Wraps each line longer than `width` at spaces. A continuation is indented as far as its line's text: under
 * the description of a command row (`  name    text`), else at the line's own indentation. A word longer than
 * the room left stays whole on its line. Example lines (`  kubectl …`, `  source …`) are never broken: they
 * are copied whole.
 */
export function wrapHelp(text: string, width: number): string {
  return text
    .split('\n')
    .flatMap((line) => wrapLine(line, width))
    .join('\n');
}

function wrapLine(line: string, width: number): string[] {
  if (line.length <= width || /^ {2}(kubectl|source) /.test(line)) return [line];
  const row = /^( {2}\S+ {2,})\S/.exec(line);
  const indent = row ? row[1]!.length : (/^ */.exec(line)?.[0].length ?? 0);
  const out: string[] = [];
  let rest = line;
  let prefix = '';
  while ((prefix + rest).length > width) {
    const room = width - prefix.length;
    let cut = rest.lastIndexOf(' ', room);
    // Not inside the leading indentation (or a command row's gap): that would leave an empty first line.
    if (cut <= indent - prefix.length) cut = rest.indexOf(' ', room);
    if (cut <= 0) break;
    out.push((prefix + rest.slice(0, cut)).trimEnd());
    rest = rest.slice(cut + 1).trimStart();
    prefix = ' '.repeat(indent);
  }
  out.push(prefix + rest);
  return out;
}
