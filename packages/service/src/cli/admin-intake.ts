import type { Command } from 'commander';
import { systemClock } from '../clock.js';
import { AdminError } from '../errors/admin-error.js';
import { type IntakeSourceStatus, intakeStatus } from '../metrics/intake-status.js';
import type { QuarantineRow } from '../store/store.js';
import { runCommand } from '../write/commands/commands.js';
import type { QuarantineEventOutcome, RetryResult } from '../write/intake/quarantine-commands.js';
import { type CommonOptions, common, confirmed, type OpenStore, run, table, yesOption } from './admin-run.js';

// `crm-export admin intake`: where each source of events stands, and the quarantine of events the write
// side refused (docs/ingest.md; docs/intake.md). What it prints names events by source, seq, id, type,
// lane and code, never by their values (they hold personal data).

/** A quarantined event as printed: no values, no message (it may quote one). */
export interface QuarantineListEntry {
  source: string;
  seq: number;
  id: string | null;
  type: string;
  lane: string;
  code: string;
  field: string | null;
  attempts: number;
  /** Seconds since it came into the quarantine, and since it was last tried. */
  ageSeconds: number;
  lastTriedSeconds: number;
}

const age = (now: number, at: number) => Math.max(0, Math.round((now - at) / 1000));

export function quarantineEntry(row: QuarantineRow, now: number): QuarantineListEntry {
  return {
    source: row.source,
    seq: row.seq,
    id: row.id,
    type: row.type,
    lane: row.lane,
    code: row.code,
    field: row.field,
    attempts: row.attempts,
    ageSeconds: age(now, row.firstAt),
    lastTriedSeconds: age(now, row.lastAt),
  };
}

/** Seconds as the tables show them: `42s`, `3m`, `5h`, `2d`. */
function duration(seconds: number | null): string {
  if (seconds === null) return '-';
  if (seconds < 120) return `${Math.round(seconds)}s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)}m`;
  if (seconds < 172_800) return `${Math.round(seconds / 3600)}h`;
  return `${Math.round(seconds / 86_400)}d`;
}

const statusTable = (list: readonly IntakeSourceStatus[]) =>
  table(
    ['SOURCE', 'LAST SEQ', 'LAST EVENT AT', 'LAG', 'APPLIED', 'DUPLICATES', 'REJECTED', 'QUARANTINE', 'OLDEST'],
    list.map((s) => [
      s.source,
      String(s.lastSeq),
      s.lastEventAt ?? '-',
      duration(s.lagSeconds),
      String(s.applied),
      String(s.duplicates),
      String(s.rejected),
      String(s.quarantineEvents),
      duration(s.quarantineOldestSeconds),
    ]),
  );

const quarantineTable = (list: readonly QuarantineListEntry[]) =>
  table(
    ['SOURCE', 'SEQ', 'ID', 'TYPE', 'LANE', 'CODE', 'FIELD', 'ATTEMPTS', 'AGE'],
    list.map((q) => [
      q.source,
      String(q.seq),
      q.id ?? '-',
      q.type,
      q.lane,
      q.code,
      q.field ?? '-',
      String(q.attempts),
      duration(q.ageSeconds),
    ]),
  );

const outcomeTable = (list: readonly QuarantineEventOutcome[]) =>
  table(
    ['SOURCE', 'SEQ', 'ID', 'TYPE', 'LANE', 'OUTCOME', 'CODE'],
    list.map((e) => [e.source, String(e.seq), e.id ?? '-', e.type, e.lane, e.outcome, e.code]),
  );

interface SelectionOptions extends CommonOptions {
  source?: string;
  lane?: string;
}

/** Adds `admin intake status` and `admin intake quarantine list|retry|drop`. */
export function registerIntakeCommands(admin: Command, open: OpenStore): void {
  const intake = admin.command('intake').description('sources of events and the quarantine of refused events');
  common(
    intake.command('status').description('each source: last seq, last event time, lag, counts, quarantine'),
  ).action((o: CommonOptions) => run(open, o, (store) => intakeStatus(store, systemClock.now()), statusTable));

  const quarantine = intake.command('quarantine').description('events the write side refused, and those behind them');
  common(quarantine.command('list').description('quarantined events by source and seq (no values)'))
    .option('--source <name>', 'events of this source')
    .option('--lane <lane>', 'events of this lane (lead:<id>, call:<id>...)')
    .action((o: SelectionOptions) =>
      run(
        open,
        o,
        async (store) => {
          const now = systemClock.now();
          return (await store.intakeQuarantine(selection(o))).map((row) => quarantineEntry(row, now));
        },
        quarantineTable,
      ),
    );

  common(
    quarantine
      .command('retry')
      .description('apply a lane (--lane) or every lane (--all) again, in seq order; applied events leave'),
  )
    .option('--lane <lane>', 'the lane to retry (lead:<id>, call:<id>...)')
    .option('--all', 'every lane')
    .option('--source <name>', 'only events of this source')
    .action((o: SelectionOptions & { all?: boolean }) =>
      run(
        open,
        o,
        (store) => {
          if ((o.lane === undefined) === (o.all !== true))
            throw new AdminError('invalid_argument', 'pass --lane <lane> or --all');
          return runCommand(store, 'intake.quarantine_retry', { ...selection(o), now: systemClock.now() });
        },
        (r: RetryResult) =>
          `applied ${r.applied}, duplicates ${r.duplicates}, refused again ${r.refused}, still waiting ${r.waiting}\n${outcomeTable(r.events)}`,
        {
          action: 'intake.quarantine_retry',
          target: [o.source, o.lane].filter((t): t is string => t !== undefined),
          details: { all: o.all === true },
          fromResult: (r) => ({
            details: { applied: r.applied, duplicates: r.duplicates, refused: r.refused, waiting: r.waiting },
          }),
        },
      ),
    );

  yesOption(
    common(
      quarantine
        .command('drop')
        .description('remove events for good: --source S --seq N, or --lane L (irreversible: asks, or --yes)'),
    ),
  )
    .option('--source <name>', 'the events of this source')
    .option('--seq <n>', 'with --source: the event with this seq')
    .option('--lane <lane>', 'the events of this lane')
    .action((o: SelectionOptions & { seq?: string; yes?: boolean }) => {
      const seq = o.seq === undefined ? undefined : Number(o.seq);
      const what = `${o.lane !== undefined ? `lane ${o.lane}` : o.seq !== undefined ? `event ${o.seq}` : 'every event'}${o.source !== undefined ? ` of ${o.source}` : ''}`;
      return confirmed(o, `${what} leaves the quarantine unapplied, which cannot be undone`, () =>
        run(
          open,
          o,
          (store) => {
            if (seq !== undefined && !(Number.isSafeInteger(seq) && seq > 0))
              throw new AdminError('invalid_argument', '--seq must be a positive whole number');
            return runCommand(store, 'intake.quarantine_drop', {
              ...selection(o),
              ...(seq === undefined ? {} : { seq }),
            });
          },
          (dropped) => `dropped ${dropped.length}\n${outcomeTable(dropped)}`,
          {
            action: 'intake.quarantine_drop',
            target: [o.source, o.lane, o.seq].filter((t): t is string => t !== undefined),
            fromResult: (dropped) => ({ details: { dropped: dropped.length } }),
          },
        ),
      );
    });
}

function selection(o: SelectionOptions): { source?: string; lane?: string } {
  return {
    ...(o.source === undefined ? {} : { source: o.source }),
    ...(o.lane === undefined ? {} : { lane: o.lane }),
  };
}
