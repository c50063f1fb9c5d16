import { strictArgs } from '@crm-export/client/strict-args';
import { Command } from 'commander';
import { RELEASE } from '../service-names.js';
import { terminalText } from './terminal-text.js';

/** `crm-export` itself, without its commands: its name, description, version and error output. */
export function rootProgram(): Command {
  return (
    new Command('crm-export')
      .description('read-only CRM export service')
      .version(RELEASE.split('@')[1] ?? RELEASE)
      .showHelpAfterError()
      .showSuggestionAfterError()
      // An error can quote what was typed (an unknown command): its control characters are shown escaped.
      .configureOutput({ outputError: (text, write) => write(terminalText(text)) })
  );
}

/**
 * Runs the command line `args` (the words after `crm-export`). A command or option this version lacks is
 * an error (exit code 1, with a suggestion) even when help or the version is asked for too.
 */
export function parseCommandLine(program: Command, args: readonly string[]): Promise<Command> {
  return program.parseAsync(strictArgs(program, args), { from: 'user' });
}
