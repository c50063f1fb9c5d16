import { type Command, CommanderError } from 'commander';
import { describe, expect, it } from 'vitest';
import { parseCommandLine, programFor } from '../../src/cli/command-line.js';
import { buildProgram } from '../../src/cli/program.js';

// `serve`, `start` and `relay` are registered alone when the command line names them, so a long-running
// process does not load the other commands' modules before it starts its work. What a user sees must not change: the same help, the same
// options, the same errors as in the whole command tree.

/** What parsing `args` on `program` printed and how it ended; the command's action never runs. */
async function outcome(program: Command, args: string[]): Promise<string> {
  let out = '';
  const quiet = (command: Command) => {
    command
      .exitOverride()
      .configureOutput({
        writeOut: (text) => {
          out += `out:${text}`;
        },
        writeErr: (text) => {
          out += `err:${text}`;
        },
      })
      .hook('preAction', () => {
        throw new CommanderError(0, 'test.ran', JSON.stringify(command.opts()));
      });
    for (const sub of command.commands) quiet(sub);
  };
  quiet(program);
  try {
    await parseCommandLine(program, args);
  } catch (error) {
    if (!(error instanceof CommanderError)) throw error;
    return `${out}|${error.code}|${error.exitCode}|${error.code === 'test.ran' ? error.message : ''}`;
  }
  return `${out}|none`;
}

describe('serve, start and relay registered alone', () => {
  const lines: string[][] = [
    ['serve', '--help'],
    ['serve', '-h'],
    ['serve', '--port', '0', '--db', 'sqlite::memory:'],
    ['serve', '--workers', '2', '--ops-port', '9000'],
    ['serve', '--port', 'x'],
    ['serve', '--bogus'],
    ['serve', '--bogus', '--help'],
    ['serve', '--prot', '1'],
    ['serve', 'extra'],
    ['serve', '-V'],
    ['serve', '--version'],
    ['start', '--help'],
    ['start', '--port', '0', '--ops-port', '0'],
    ['start', '--leads', '-1'],
    ['start', '--bogus', '-h'],
    ['relay', '--help'],
    ['relay', '--batch', '0'],
    ['relay', '--bogus'],
  ];

  it.each(lines)('parse %s ... as in the whole command tree: same help, options and errors', async (...args) => {
    const alone = await outcome(await programFor(args), args);
    expect(alone).toBe(await outcome(buildProgram(), args));
  });

  it('are the only commands taken apart: any other first word gets the whole tree', async () => {
    const names = (program: Command) => program.commands.map((c) => c.name());
    expect(names(await programFor(['serve']))).toEqual(['serve']);
    expect(names(await programFor(['start', '--help']))).toEqual(['start']);
    expect(names(await programFor(['relay', '--once']))).toEqual(['relay']);
    const whole = names(buildProgram());
    for (const args of [[], ['help', 'serve'], ['--help'], ['admin'], ['constructor'], ['servee'], ['-V', 'serve']]) {
      expect(names(await programFor(args))).toEqual(whole);
    }
  });
});
