import type { Command } from 'commander';
import { printable } from '../printable.js';
import { isMirrorFile } from '../sync/mirror-files.js';
import { mirrorStatus } from '../sync/mirror-status.js';
import { openMirror } from '../sync/open-mirror.js';
import { exportMirror } from '../torture/mirror-export.js';

/** Adds `mirror status` and `mirror export` to `program`. */
export function registerMirrorCommands(program: Command): void {
  const mirror = program.command('mirror').description('Inspect a mirror written by `sync`');
  mirror
    .command('status')
    .description('Each team’s cursor age, counts per kind, tombstones and last error')
    .requiredOption('--into <target>', 'sqlite:PATH or postgres://...')
    .option('--json', 'print JSON')
    .action(async (flags: { into: string; json?: boolean }) => {
      const m = await openMirror(flags.into);
      try {
        const status = await mirrorStatus(m.db);
        if (flags.json) {
          process.stdout.write(`${JSON.stringify(status)}\n`);
          return;
        }
        if (status.teams.length === 0) process.stdout.write('no team synced yet\n');
        for (const t of status.teams) {
          const counts = Object.entries(t.counts)
            .map(([k, n]) => `${printable(k)}=${n}`)
            .join(' ');
          const age = t.cursor_age_seconds === null ? 'no cursor yet' : `cursor ${t.cursor_age_seconds}s old`;
          process.stdout.write(`${printable(t.team)}: ${age}; ${counts || 'no records'}; tombstones=${t.tombstones}`);
          process.stdout.write(`; last error: ${t.last_error === null ? 'none' : printable(t.last_error)}\n`);
        }
      } finally {
        await m.close();
      }
    });
  mirror
    .command('export')
    .description(
      'Write every record of the mirror as NDJSON lines {team, kind, id, version, record} (the torture kit’s copy format)',
    )
    .requiredOption('--into <target>', 'sqlite:PATH or postgres://...')
    .option('--out <path>', 'file to write (default: standard output); never the mirror itself')
    .action(async (flags: { into: string; out?: string }) => {
      if (flags.out !== undefined && isMirrorFile(flags.into, flags.out)) {
        process.stderr.write(
          `crm-export mirror export: --out ${printable(flags.out)} is the mirror ${printable(flags.into)} or a file SQLite keeps beside it: write it elsewhere\n`,
        );
        process.exitCode = 2;
        return;
      }
      const m = await openMirror(flags.into);
      try {
        await exportMirror(m.db, flags.out);
      } finally {
        await m.close();
      }
    });
}
