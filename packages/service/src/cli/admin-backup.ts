import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { systemClock } from '../clock.js';
import { AdminError } from '../errors/admin-error.js';
import { erasureLine, listErasures, parseErasures, replayErasures } from '../write/events/erasure-replay.js';
import { type CommonOptions, common, confirmed, type OpenStore, refuse, run, yesOption } from './admin-run.js';
import { resolveDbUrl, startDir } from './options.js';
import { checkOutputFiles } from './output-files.js';

// `crm-export admin backup` (the SQLite file, online) and `admin erasures export|replay`, which keep a
// restore from bringing back a person erased after the backup (docs/backup-restore.md).

const PG_DUMP_HINT =
  'admin backup copies the embedded SQLite database; on PostgreSQL take backups with pg_dump -Fc or continuous archiving (docs/backup-restore.md)';

/** A path from the command line, taken from where npm/npx was started (as `--db` is). */
const fromCwd = (path: string) => resolve(startDir(), path);

/** Adds `admin backup` and `admin erasures export|replay` under the program's `admin` command. */
export function registerBackupCommands(program: Command, open: OpenStore): void {
  const admin = program.commands.find((c) => c.name() === 'admin') ?? program.command('admin');

  common(
    admin
      .command('backup')
      .description(
        'copy the SQLite database to FILE while the service serves and writes (a consistent, compacted copy)',
      ),
  )
    .requiredOption('--to <file>', 'the copy to write (refused when it exists, unless --force)')
    .option('--force', 'replace FILE when it exists')
    .action(async (o: CommonOptions & { to: string; force?: boolean }) => {
      // Refused before connecting: PostgreSQL has its own tools, and nothing here needs to reach it.
      if (!resolveDbUrl(o.db).startsWith('sqlite:')) return refuse(o, new AdminError('invalid_argument', PG_DUMP_HINT));
      await run(
        open,
        o,
        async (store) => {
          // A capability of the backend (`Store.backup`): PostgreSQL has none.
          if (!store.backup) throw new AdminError('invalid_argument', PG_DUMP_HINT);
          const to = fromCwd(o.to);
          checkOutputFiles(resolveDbUrl(o.db), `--to ${o.to}`, [to, `${to}-wal`, `${to}-shm`]);
          if (existsSync(to) && !o.force)
            throw new AdminError('invalid_argument', `${o.to} exists (--force replaces it)`);
          // Written beside the target and renamed: a failed copy never leaves a half file under its name.
          const partial = `${to}.partial-${process.pid}`;
          try {
            await store.backup(partial);
            for (const suffix of ['-wal', '-shm']) rmSync(`${to}${suffix}`, { force: true });
            renameSync(partial, to);
          } finally {
            rmSync(partial, { force: true });
          }
          return { backup: to, takenAt: new Date().toISOString() };
        },
        (r) => `backup written: ${r.backup} (${r.takenAt})`,
        { action: 'backup.create', details: { to: o.to, force: o.force ?? false } },
      );
    });

  const erasures = admin
    .command('erasures')
    .description('erased records (ids only): export before a restore, replay after it');
  common(
    erasures.command('export').description('write every erased record and message of this database as NDJSON to FILE'),
  )
    .requiredOption('--to <file>', 'NDJSON file to write (replaced)')
    .action((o: CommonOptions & { to: string }) =>
      run(
        open,
        o,
        async (store) => {
          const list = await listErasures(store);
          checkOutputFiles(resolveDbUrl(o.db), `--to ${o.to}`, [fromCwd(o.to)]);
          writeFileSync(fromCwd(o.to), list.map(erasureLine).join(''));
          return { exported: list.length, to: fromCwd(o.to) };
        },
        (r) => `erased records exported: ${r.exported} -> ${r.to}`,
        {
          action: 'erasures.export',
          details: { to: o.to },
          fromResult: (r) => ({ details: { exported: r.exported } }),
        },
      ),
    );
  yesOption(
    common(
      erasures
        .command('replay <file>')
        .description(
          'after a restore: erase again every record FILE lists that this database still serves (asks, or --yes)',
        ),
    ),
  ).action((file: string, o: CommonOptions & { yes?: boolean }) =>
    confirmed(o, `every record ${file} lists is erased again, which cannot be undone`, () =>
      run(
        open,
        o,
        async (store) => {
          let list: { kind: string; id: string }[];
          try {
            list = parseErasures(readFileSync(fromCwd(file), 'utf8'));
          } catch (err) {
            throw new AdminError('invalid_argument', `${file}: ${err instanceof Error ? err.message : String(err)}`);
          }
          const result = await replayErasures(store, systemClock, list);
          if (result.stillLive.length > 0)
            throw new AdminError(
              'invalid_argument',
              `still served after the replay: ${result.stillLive.map((r) => `${r.kind} ${r.id}`).join(', ')}`,
            );
          return { erased: result.erased, unchanged: result.unchanged };
        },
        (r) => `erased again: ${r.erased}; already gone: ${r.unchanged}`,
        {
          action: 'erasures.replay',
          details: { file },
          fromResult: (r) => ({ details: { erased: r.erased, unchanged: r.unchanged } }),
        },
      ),
    ),
  );
}
