import type { Command, Option } from 'commander';

// Commander answers `--help` (and `-V`) before it looks at the command line's other words: `crm-export
// relay --help` prints the main help and exits 0, `help relay` prints it too, and `start --bogus --help`
// shows start's help. A script that probes for or calls a command or option this version lacks would
// believe it ran. `strictArgs` finds such a command line and leaves out its requests for help or the
// version, so that commander reports the unknown command or option instead: exit code 1, a suggestion
// when a known name is close, and the help of the command it reached. Both commands, `crm-export` and
// `crm-export-sync`, parse their command lines through it.

const HELP_FLAGS = ['-h', '--help'];
/** What commander answers before it looks at the rest: help, and the version (an option of the program). */
const REQUESTS = [...HELP_FLAGS, '-V', '--version'];

/** The option `flag` (`--db`, `--db=x`, `-V`) names on `command` or a command above it (commander parses those too). */
function findOption(command: Command, flag: string): Option | undefined {
  const name = flag.startsWith('--') ? flag.split('=', 1)[0] : flag.slice(0, 2);
  for (let c: Command | null = command; c; c = c.parent) {
    const option = c.options.find((o) => o.long === name || o.short === name);
    if (option) return option;
  }
  return undefined;
}

/** Whether `flag` for `option` is followed by its value as the next word (`--db URL`, not `--db=URL`, `-pVALUE`). */
function valueFollows(option: Option, flag: string, next: string | undefined): boolean {
  const attached = flag.startsWith('--') ? flag.includes('=') : flag.length > 2;
  if (attached || next === undefined) return false;
  if (option.required) return true;
  return option.optional && !next.startsWith('-');
}

/**
 * `args` (the words after `crm-export`) as commander should parse them: unchanged, unless they name a
 * command or option that does not exist and also ask for help or the version (`-h`, `--help`, `-V`,
 * `--version`, the `help` command), which are then left out.
 */
export function strictArgs(program: Command, args: readonly string[]): string[] {
  let command = program;
  const requests: number[] = [];
  let unknown = false;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    if (arg === '--') break;
    // Past an unknown word commander cannot tell values from options; it still answers these.
    if (unknown) {
      if (REQUESTS.includes(arg)) requests.push(i);
      continue;
    }
    if (arg.length > 1 && arg.startsWith('-')) {
      if (HELP_FLAGS.includes(arg)) {
        requests.push(i);
        continue;
      }
      const option = findOption(command, arg);
      if (!option) unknown = true;
      else if (option.long === '--version') requests.push(i);
      else if (valueFollows(option, arg, args[i + 1])) i++;
      continue;
    }
    // A word under a command without subcommands is one of its arguments.
    if (command.commands.length === 0) continue;
    const sub = command.commands.find((c) => c.name() === arg || c.aliases().includes(arg));
    if (sub) command = sub;
    else if (arg === 'help') requests.push(i);
    else unknown = true;
  }
  return unknown && requests.length > 0 ? args.filter((_, i) => !requests.includes(i)) : [...args];
}
