// The completion scripts `kubectl nodecare completion bash|zsh|fish` prints, for the command kubectl-nodecare,
// generated from the completion spec (completion.ts): every verb, every flag of its option table and the values
// of the flags that take only some. Node names are not known in advance: the scripts ask the program itself
// (`kubectl-nodecare __complete ...`, which asks the cluster with a short deadline and prints nothing on
// failure). `kubectl nodecare <TAB>` is kubectl's own completion, through kubectl_complete-nodecare.

import type { CommandSpec, CompletionSpec, FlagSpec } from './completion.ts';
import { TOP_FLAGS } from './completion.ts';

export const SHELLS = ['bash', 'zsh', 'fish'] as const;
export type Shell = (typeof SHELLS)[number];

export const PROGRAM_NAME = 'kubectl-nodecare';

/** A shell word in single quotes. */
const quote = (text: string): string => `'${text.replaceAll("'", `'\\''`)}'`;

const flagWords = (flag: FlagSpec): string[] => [
  ...(flag.short !== undefined ? [`-${flag.short}`] : []),
  `--${flag.name}`,
];

/** What bash offers for a flag's value: `<file>`, `<node>`, `<value>` (anything) or the values themselves. */
function bashKind(flag: FlagSpec): string {
  if (flag.file) return '<file>';
  if (flag.node) return '<node>';
  return flag.values ? flag.values.join(' ') : '<value>';
}

/** bash: node names from the program itself, and how each kind of value is offered (the same for any spec). */
const BASH_OFFER = `# Node names, from the program itself (it asks the cluster; nothing when it cannot), for the words typed.
__kubectl_nodecare_nodes() {
  local -a words
  local line
  read -ra words <<<"\${COMP_LINE:0:COMP_POINT}"
  case \${COMP_LINE:COMP_POINT-1:1} in [[:space:]]) words+=('') ;; esac
  local IFS=$'\\n'
  COMPREPLY=($("\${words[0]}" __complete "\${words[@]:1}" 2>/dev/null | while IFS= read -r line; do
    case $line in :*) ;; *) line=\${line%%$'\\t'*}; printf '%s\\n' "\${line#--*=}" ;; esac
  done))
}

__kubectl_nodecare_offer() {
  case $1 in
    '<file>') compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- "$cur")) ;;
    '<node>') __kubectl_nodecare_nodes ;;
    '<value>') ;;
    *) COMPREPLY=($(compgen -W "$1" -- "$cur")) ;;
  esac
}

`;

/** bash: the completion function, which offers what the word being completed may be. */
function bashEntry(spec: CompletionSpec): string {
  return `_kubectl_nodecare() {
  local cur=\${COMP_WORDS[COMP_CWORD]} prev=\${COMP_WORDS[COMP_CWORD-1]} verb kind i word given=
  COMPREPLY=()
  if [ "$COMP_CWORD" -le 1 ]; then
    case $cur in
      -*) COMPREPLY=($(compgen -W ${quote(TOP_FLAGS.join(' '))} -- "$cur")) ;;
      *) COMPREPLY=($(compgen -W ${quote(spec.commands.map((c) => c.name).join(' '))} -- "$cur")) ;;
    esac
    return 0
  fi
  verb=\${COMP_WORDS[1]}
  # --flag=value: bash splits the word at '=' (COMP_WORDBREAKS), so the flag is the word before the '='.
  if [ "$cur" = = ]; then cur=; elif [ "$prev" = = ] && [ "$COMP_CWORD" -ge 3 ]; then prev=\${COMP_WORDS[COMP_CWORD-2]}; fi
  if kind=$(__kubectl_nodecare_kind "$verb" "$prev"); then
    __kubectl_nodecare_offer "$kind"
    return 0
  fi
  case $cur in
    -*) COMPREPLY=($(compgen -W "$(__kubectl_nodecare_flags "$verb")" -- "$cur")) ;;
    *)
      for ((i = 2; i < COMP_CWORD; i++)); do
        word=\${COMP_WORDS[i]}
        case $word in
          =) i=$((i + 1)) ;;
          -*) if [ "\${COMP_WORDS[i+1]}" != = ] && __kubectl_nodecare_kind "$verb" "$word" >/dev/null; then i=$((i + 1)); fi ;;
          *) given=1 ;;
        esac
      done
      if [ -z "$given" ] && kind=$(__kubectl_nodecare_positional "$verb"); then __kubectl_nodecare_offer "$kind"; fi
      ;;
  esac
  return 0
}

`;
}

function bashScript(spec: CompletionSpec): string {
  const kinds = spec.commands.flatMap((c) =>
    c.flags
      .filter((f) => f.takesValue)
      .map(
        (f) =>
          `    ${flagWords(f)
            .map((w) => quote(`${c.name} ${w}`))
            .join('|')}) echo ${quote(bashKind(f))} ;;`,
      ),
  );
  const flags = spec.commands.map(
    (c) => `    ${c.name}) echo ${quote(c.flags.flatMap(flagWords).join(' '))} ;;`,
  );
  const positionals = spec.commands
    .filter((c) => c.positional)
    .map((c) => `    ${c.name}) echo ${quote(bashKind(c.positional as FlagSpec))} ;;`);
  return `# bash completion for ${PROGRAM_NAME} (${PROGRAM_NAME} completion bash). Load it in this shell with
#   source <(${PROGRAM_NAME} completion bash)
# or write it to a file bash-completion loads (docs/operations.md, "Shell completion").

# What the value of a flag of a command is: <file>, <node>, <value>, or the words it may be.
__kubectl_nodecare_kind() {
  case "$1 $2" in
${kinds.join('\n')}
    *) return 1 ;;
  esac
}

__kubectl_nodecare_flags() {
  case $1 in
${flags.join('\n')}
  esac
}

__kubectl_nodecare_positional() {
  case $1 in
${positionals.join('\n')}
    *) return 1 ;;
  esac
}

${BASH_OFFER}${bashEntry(spec)}complete -F _kubectl_nodecare ${PROGRAM_NAME}
`;
}

/** A description inside zsh's `[...]` or after a `name:`: no brackets, colons or backslashes. */
const zshText = (text: string): string => text.replace(/[[\]:\\]/g, ' ').replace(/\s+/g, ' ');

function zshAction(flag: FlagSpec): string {
  if (flag.file) return ':file:_files';
  if (flag.node) return ':node:_kubectl_nodecare_nodes';
  return flag.values ? `:${flag.name}:(${flag.values.join(' ')})` : `:${flag.name}: `;
}

function zshSpecs(command: CommandSpec): string[] {
  // A long flag's value follows it or an '=' (`--output json`, `--output=json`); a short one's follows it or is
  // joined to it (`-o json`, `-ojson`), as kubectl takes them.
  const specs = command.flags.flatMap((f) => {
    const description = `[${zshText(f.description)}]`;
    const long = f.takesValue ? `=${description}${zshAction(f)}` : description;
    if (f.short === undefined) return [quote(`--${f.name}${long}`)];
    const exclusive = `(-${f.short} --${f.name})`;
    const short = f.takesValue ? `+${description}${zshAction(f)}` : description;
    return [quote(`${exclusive}-${f.short}${short}`), quote(`${exclusive}--${f.name}${long}`)];
  });
  if (command.positional) specs.push(quote(`1${zshAction(command.positional)}`));
  return specs;
}

function zshScript(spec: CompletionSpec): string {
  const commands = spec.commands.map((c) => `    ${quote(`${c.name}:${zshText(c.summary)}`)}`);
  const cases = spec.commands.map(
    (c) => `    ${c.name})\n      _arguments -s \\\n        ${zshSpecs(c).join(' \\\n        ')}\n      ;;`,
  );
  return `#compdef ${PROGRAM_NAME}
# zsh completion for ${PROGRAM_NAME} (${PROGRAM_NAME} completion zsh). Load it in this shell with
#   source <(${PROGRAM_NAME} completion zsh)
# or write it as _${PROGRAM_NAME} into a directory of $fpath (docs/operations.md, "Shell completion").

# Node names, from the program itself (it asks the cluster; nothing when it cannot), for the words typed.
_kubectl_nodecare_nodes() {
  local -a lines
  lines=("\${(@f)$("$_kubectl_nodecare_program" __complete "\${(@)words[1,CURRENT-1]}" "$PREFIX" 2>/dev/null)}")
  lines=("\${(@)lines:#:*}")
  lines=("\${(@)\${(@)lines%%$'\\t'*}#--*=}")
  compadd -- "\${(@)lines:#}"
}

_kubectl_nodecare() {
  local _kubectl_nodecare_program=\${words[1]}
  local -a commands
  commands=(
${commands.join('\n')}
  )
  if (( CURRENT == 2 )); then
    if [[ $PREFIX == -* ]]; then
      compadd -- ${TOP_FLAGS.join(' ')}
    else
      _describe -t commands '${PROGRAM_NAME} command' commands
    fi
    return
  fi
  shift words
  (( CURRENT-- ))
  case \${words[1]} in
${cases.join('\n')}
  esac
}

# Autoloaded from $fpath as _${PROGRAM_NAME}, the file's body is the first completion: complete. Sourced: register.
if [[ $funcstack[1] == _${PROGRAM_NAME} ]]; then
  _kubectl_nodecare "$@"
else
  compdef _kubectl_nodecare ${PROGRAM_NAME}
fi
`;
}

function fishFlag(command: CommandSpec, flag: FlagSpec): string {
  const parts = [`complete -c ${PROGRAM_NAME}`, `-n ${quote(`__fish_seen_subcommand_from ${command.name}`)}`];
  if (flag.short !== undefined) parts.push(`-s ${flag.short}`);
  parts.push(`-l ${flag.name}`);
  if (flag.file) parts.push('-r -F');
  else if (flag.node) parts.push(`-x -a ${quote('(__kubectl_nodecare_nodes)')}`);
  else if (flag.values) parts.push(`-x -a ${quote(flag.values.join(' '))}`);
  else if (flag.takesValue) parts.push('-x');
  parts.push(`-d ${quote(flag.description)}`);
  return parts.join(' ');
}

function fishScript(spec: CompletionSpec): string {
  const lines = spec.commands.flatMap((c) => [
    `complete -c ${PROGRAM_NAME} -n __fish_use_subcommand -a ${c.name} -d ${quote(c.summary)}`,
    ...c.flags.map((f) => fishFlag(c, f)),
    ...(c.positional
      ? [
          `complete -c ${PROGRAM_NAME} -n ${quote(`__fish_seen_subcommand_from ${c.name}`)} -a ${quote(
            c.positional.node ? '(__kubectl_nodecare_nodes)' : (c.positional.values ?? []).join(' '),
          )}`,
        ]
      : []),
  ]);
  return `# fish completion for ${PROGRAM_NAME} (${PROGRAM_NAME} completion fish). Load it in this shell with
#   ${PROGRAM_NAME} completion fish | source
# or write it to ~/.config/fish/completions/${PROGRAM_NAME}.fish (docs/operations.md, "Shell completion").

# Node names, from the program itself (it asks the cluster; nothing when it cannot), for the words typed.
function __kubectl_nodecare_nodes
    set -l words (commandline -opc)
    $words[1] __complete $words[2..-1] (commandline -ct) 2>/dev/null | string match -v -r '^:' | string replace -r '\\t.*' '' | string replace -r '^--[^=]*=' ''
end

complete -c ${PROGRAM_NAME} -f
complete -c ${PROGRAM_NAME} -n __fish_use_subcommand -l help -d 'Show the help and exit'
complete -c ${PROGRAM_NAME} -n __fish_use_subcommand -l version -d 'Print the version and exit'
${lines.join('\n')}
`;
}

export function completionScript(shell: Shell, spec: CompletionSpec): string {
  switch (shell) {
    case 'bash':
      return bashScript(spec);
    case 'zsh':
      return zshScript(spec);
    case 'fish':
      return fishScript(spec);
    default: {
      const unreachable: never = shell;
      throw new Error(`unknown shell ${String(unreachable)}`);
    }
  }
}
