import { type Command, CommanderError } from 'commander';
import { describe, expect, it } from 'vitest';
import { buildProgram, parseCommandLine } from '../../src/cli/program.js';
import { runCli } from './cli.js';

// A command or option this version lacks is an error: exit code 1 and a suggestion, never the help with
// exit code 0, even when help or the version is asked for on the same line (a script probing for a command
// with `--help` must not believe it exists).

interface Outcome {
  code: string;
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** Runs `crm-export ...args` on the program in this process, as bin/crm-export.js does; nothing runs past parsing. */
async function parse(args: string[]): Promise<Outcome> {
  const program = buildProgram();
  let stdout = '';
  let stderr = '';
  const quiet = (command: Command) => {
    command
      .exitOverride()
      .configureOutput({
        writeOut: (text) => {
          stdout += text;
        },
        writeErr: (text) => {
          stderr += text;
        },
      })
      // Commands that would run are stopped before their action: only the parse is under test.
      .hook('preAction', () => {
        throw new CommanderError(0, 'test.ran', 'ran');
      });
    for (const sub of command.commands) quiet(sub);
  };
  quiet(program);
  try {
    await parseCommandLine(program, args);
  } catch (error) {
    if (!(error instanceof CommanderError)) throw error;
    return { code: error.code, exitCode: error.exitCode, stdout, stderr };
  }
  return { code: 'none', exitCode: 0, stdout, stderr };
}

describe('crm-export: an unknown command or option', () => {
  it('is an error with exit code 1 and a suggestion, even with --help, -h, -V or the help command', async () => {
    const unknownCommand: [string[], string | undefined][] = [
      [['forward'], undefined],
      [['forward', '--help'], undefined],
      [['forward', '-h'], undefined],
      [['forward', '-V'], undefined],
      [['forward', '--version'], undefined],
      [['help', 'forward'], undefined],
      [['serv', '--help'], 'serve'],
      [['admin', 'foo'], undefined],
      [['admin', 'foo', '--help'], undefined],
      [['admin', 'help', 'foo'], undefined],
      [['admin', 'orgs', 'lst', '-h'], 'list'],
      [['admin', 'audit', 'lsit', '--json', '--help'], 'list'],
      [['mirror', 'stat', '--help'], 'status'],
    ];
    for (const [args, suggestion] of unknownCommand) {
      const outcome = await parse(args);
      expect(outcome, args.join(' ')).toMatchObject({ code: 'commander.unknownCommand', exitCode: 1, stdout: '' });
      expect(outcome.stderr).toMatch(/^error: unknown command '\w+'/);
      if (suggestion) expect(outcome.stderr).toContain(`(Did you mean ${suggestion}?)`);
      // The help of the command it reached follows, on standard error.
      expect(outcome.stderr).toContain('Usage: crm-export');
    }
    const unknownOption: [string[], string | undefined][] = [
      [['--bogus', '--help'], undefined],
      [['start', '--bogus', '--help'], undefined],
      [['admin', 'orgs', 'list', '--jsn', '--help'], '--json'],
      [['admin', 'backup', '--to', 'copy.db', '--forse', '-h'], '--force'],
      [['admin', '--db', 'sqlite:x.db', 'orgs', 'list', '--help'], undefined],
    ];
    for (const [args, suggestion] of unknownOption) {
      const outcome = await parse(args);
      expect(outcome, args.join(' ')).toMatchObject({ code: 'commander.unknownOption', exitCode: 1, stdout: '' });
      if (suggestion) expect(outcome.stderr).toContain(`(Did you mean ${suggestion}?)`);
    }
  });

  it('a command alone that needs a subcommand (admin, admin orgs, mirror) exits 1 with its help', async () => {
    for (const args of [[], ['admin'], ['admin', 'orgs'], ['admin', 'audit'], ['mirror']]) {
      const outcome = await parse(args);
      expect(outcome, args.join(' ')).toMatchObject({ code: 'commander.help', exitCode: 1, stdout: '' });
      expect(outcome.stderr).toContain('Usage: crm-export');
    }
  });

  it('help and the version of known commands still print and exit 0; option values are not taken for help', async () => {
    for (const args of [
      ['--help'],
      ['help'],
      ['help', 'admin'],
      ['admin', '--help'],
      ['admin', 'help', 'orgs'],
      ['admin', 'orgs', 'list', '--json', '--help'],
      ['admin', 'audit', 'list', '--since', '2026-01-01', '-h'],
      ['start', '--port', '3000', '--help'],
    ]) {
      const outcome = await parse(args);
      expect(outcome.code, args.join(' ')).toMatch(/^commander\.help(Displayed)?$/);
      expect(outcome, args.join(' ')).toMatchObject({ exitCode: 0, stderr: '' });
      expect(outcome.stdout).toContain('Usage: crm-export');
    }
    expect(await parse(['-V'])).toMatchObject({ code: 'commander.version', exitCode: 0 });
    expect(await parse(['admin', 'orgs', 'list', '--version'])).toMatchObject({ code: 'commander.version' });
    // `--actor --help` names an actor called --help: the command runs.
    expect(await parse(['admin', 'orgs', 'create', 'Acme', '--actor', '--help'])).toMatchObject({ code: 'test.ran' });
    expect(await parse(['admin', 'orgs', 'list', '--db=sqlite:x.db'])).toMatchObject({ code: 'test.ran' });
  });

  it('an unknown command typed with control characters is quoted with them escaped', async () => {
    const outcome = await parse(['\u001b]0;owned\u0007\u001b[2J', '--help']);
    expect(outcome.code).toBe('commander.unknownCommand');
    expect(outcome.stderr).toContain("unknown command '\\x1b]0;owned\\x07\\x1b[2J'");
    expect(outcome.stderr).not.toMatch(/[^\P{Cc}\n]/u);
  });

  it('the installed command exits 1 for crm-export forward --help', { timeout: 30_000 }, async () => {
    const result = await runCli(['forward', '--help']);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain("error: unknown command 'forward'");
  });
});
