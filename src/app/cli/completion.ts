/**
 * `dirigo completion bash|zsh|fish`: a completion script for the shell. The words it offers are read from
 * each command's own `--help` text (its subcommands and every `--option` it names), so completion cannot
 * drift from what the commands accept.
 */
import { CliError, EXIT } from '../../terminal/output.ts';

export type Command = (argv: string[]) => Promise<number>;

interface Words {
  subcommands: string[];
  options: string[];
}

const USAGE = `usage: dirigo completion bash|zsh|fish

Prints a completion script for the shell. The commands complete as 'dirigo'; with the clone's CLI,
alias dirigo='npx dirigo' first.

examples:
  source <(npx dirigo completion bash)                          # this shell
  npx dirigo completion bash > ~/.local/share/bash-completion/completions/dirigo
  npx dirigo completion zsh > "\${fpath[1]}/_dirigo"
  npx dirigo completion fish > ~/.config/fish/completions/dirigo.fish
`;

/** What `run --help` prints: commands answer --help before they read anything else. */
async function helpText(run: Command): Promise<string> {
  let text = '';
  const write = process.stdout.write;
  process.stdout.write = ((chunk: string | Uint8Array) => {
    text += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
    return true;
  }) as typeof process.stdout.write;
  try {
    await run(['--help']);
  } finally {
    process.stdout.write = write;
  }
  return text;
}

/**
 * Subcommands are the words indented under `commands:` and the bare words after `dirigo <name>` on the
 * usage lines (`add|list|remove` gives three); options are every `--option` the text names.
 */
export function wordsOf(name: string, help: string): Words {
  const subcommands = new Set<string>();
  let inCommands = false;
  for (const line of help.split('\n')) {
    if (/^commands:/.test(line)) inCommands = true;
    else if (!line.startsWith(' ')) inCommands = false;
    else if (inCommands) {
      const word = /^ {2}([a-z][\w-]*)(\s|$)/.exec(line)?.[1];
      if (word) subcommands.add(word);
    }
    const usage = new RegExp(`^(?:usage:)?\\s*dirigo ${name} ([a-z][\\w|-]*)`).exec(line)?.[1];
    if (usage) for (const word of usage.split('|')) subcommands.add(word);
  }
  const options = new Set(help.match(/--[a-z][a-z0-9-]*/g) ?? []);
  options.add('--help');
  return { subcommands: [...subcommands], options: [...options].sort() };
}

function bash(top: string[], words: Record<string, Words>): string {
  const cases = Object.entries(words)
    .map(([name, w]) => `    ${name}) subs="${w.subcommands.join(' ')}"; opts="${w.options.join(' ')}" ;;`)
    .join('\n');
  // Options after a dash; the subcommand as the second word; anything else is a file (complete -o default).
  return `# bash completion for dirigo: source <(npx dirigo completion bash)
_dirigo() {
  local cur=\${COMP_WORDS[COMP_CWORD]} cmd= sub= subs= opts= i
  for ((i = 1; i < COMP_CWORD; i++)); do
    case \${COMP_WORDS[i]} in
      -*) ;;
      *) if [[ -z $cmd ]]; then cmd=\${COMP_WORDS[i]}; elif [[ -z $sub ]]; then sub=\${COMP_WORDS[i]}; fi ;;
    esac
  done
  case $cmd in
    '') subs="${top.join(' ')}"; opts="--help --version" ;;
${cases}
  esac
  COMPREPLY=()
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
  elif [[ -z $cmd || ( -z $sub && -n $subs ) ]]; then
    COMPREPLY=($(compgen -W "$subs" -- "$cur"))
  fi
}
complete -o default -F _dirigo dirigo
`;
}

function zsh(top: string[], words: Record<string, Words>): string {
  const cases = Object.entries(words)
    .map(([name, w]) => `    ${name}) subcommands=(${w.subcommands.join(' ')}); options=(${w.options.join(' ')}) ;;`)
    .join('\n');
  return `#compdef dirigo
# zsh completion for dirigo: npx dirigo completion zsh > "\${fpath[1]}/_dirigo"
_dirigo() {
  local -a subcommands options
  if (( CURRENT == 2 )); then
    compadd -- ${top.join(' ')} --help --version
    return
  fi
  case \${words[2]} in
${cases}
  esac
  if [[ \${words[CURRENT]} == -* ]]; then
    compadd -- $options
  elif (( CURRENT == 3 && \${#subcommands} > 0 )); then
    compadd -- $subcommands
  else
    _files
  fi
}
compdef _dirigo dirigo
`;
}

function fish(top: string[], words: Record<string, Words>): string {
  const lines = [
    '# fish completion for dirigo: npx dirigo completion fish > ~/.config/fish/completions/dirigo.fish',
    `complete -c dirigo -n __fish_use_subcommand -f -a '${top.join(' ')}'`,
    "complete -c dirigo -n __fish_use_subcommand -l help -l version",
  ];
  for (const [name, w] of Object.entries(words)) {
    if (w.subcommands.length) lines.push(`complete -c dirigo -n '__fish_seen_subcommand_from ${name}' -a '${w.subcommands.join(' ')}'`);
    lines.push(`complete -c dirigo -n '__fish_seen_subcommand_from ${name}' ${w.options.map((o) => `-l ${o.slice(2)}`).join(' ')}`);
  }
  return `${lines.join('\n')}\n`;
}

const SHELLS = { bash, zsh, fish } as const;

/** The completion command for `commands`, the CLI's table of commands. */
export function completionCommand(commands: Record<string, { run: Command }>): Command {
  return async (argv) => {
    const [shell] = argv;
    if (shell === '--help' || shell === '-h') {
      process.stdout.write(USAGE);
      return EXIT.ok;
    }
    if (argv.length !== 1 || !(shell! in SHELLS)) throw new CliError(`say which shell: bash, zsh or fish\n\n${USAGE}`, EXIT.usage);
    const words: Record<string, Words> = {};
    for (const [name, c] of Object.entries(commands)) words[name] = wordsOf(name, name === 'completion' ? USAGE : await helpText(c.run));
    process.stdout.write(SHELLS[shell as keyof typeof SHELLS](Object.keys(commands), words));
    return EXIT.ok;
  };
}
