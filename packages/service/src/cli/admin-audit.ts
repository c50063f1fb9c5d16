import type { Command } from 'commander';
import { AdminError } from '../errors/admin-error.js';
import { AUDIT_LIST_DEFAULT_LIMIT, AUDIT_LIST_MAX_LIMIT, listAuditAction } from '../manage/actions/operate.js';
import type { AuditEntry } from '../store/store.js';
import { type CommonOptions, type OpenStore, runAction, table } from './admin-run.js';

// `crm-export admin audit list`: the audit trail every changing admin command writes (docs/auth.md,
// "Audit trail"). Reading it is not recorded. It never drops entries silently: the restore procedure
// re-applies revocations from it (docs/backup-restore.md), so a cut list must be seen, by people and by scripts.

interface AuditListOptions extends CommonOptions {
  since?: string;
  until?: string;
  action?: string;
  actor?: string;
  target?: string;
  limit?: string;
  all?: boolean;
}

/** The input of the `audit.list` action from the command's options. */
function auditInput(o: AuditListOptions): Record<string, unknown> {
  if (o.all && o.limit !== undefined) throw new AdminError('invalid_argument', 'pass --all or --limit, not both');
  const input: Record<string, unknown> = {};
  if (o.all) input.all = true;
  else if (o.limit !== undefined) {
    const limit = Number(o.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > AUDIT_LIST_MAX_LIMIT)
      throw new AdminError('invalid_argument', `--limit must be a whole number from 1 to ${AUDIT_LIST_MAX_LIMIT}`);
    input.limit = limit;
  }
  for (const field of ['since', 'until', 'action', 'actor', 'target'] as const) {
    if (o[field] !== undefined) input[field] = o[field];
  }
  return input;
}

function auditTable(list: readonly AuditEntry[]): string {
  return table(
    ['TIME', 'ACTOR', 'ACTION', 'TARGET', 'OUTCOME', 'DETAILS'],
    list.map((e) => [
      e.at,
      e.actor,
      e.action,
      e.target.join(',') || '-',
      e.outcome,
      Object.keys(e.details).length ? JSON.stringify(e.details) : '',
    ]),
  );
}

/** Adds `admin audit list`. */
export function registerAuditCommands(admin: Command, open: OpenStore): void {
  const audit = admin.command('audit').description('the audit trail of the admin commands');
  // Not `common`: here `--actor` filters the entries (a read names no actor of its own).
  audit
    .command('list')
    .description('admin actions, oldest first: the newest --limit entries that match every filter given, or --all')
    .option('--db <url>', 'database URL (default: DATABASE_URL or the local SQLite file)')
    .option('--json', 'print JSON')
    .option('--actor <name>', 'entries of this actor')
    .option('--since <time>', 'entries at or after this ISO 8601 time')
    .option('--until <time>', 'entries before this ISO 8601 time')
    .option('--action <name>', 'this action (integration.revoke) or every action under a prefix (integration)')
    .option('--target <id>', 'entries naming this id')
    .option(
      '--limit <n>',
      `at most this many entries, the newest (default ${AUDIT_LIST_DEFAULT_LIMIT}); exit code 1 when more match`,
    )
    .option('--all', 'every matching entry, however many (what a restore re-applies)')
    .action(async (o: AuditListOptions) => {
      let cut: number | undefined;
      await runAction<{ entries: AuditEntry[]; cut: boolean }>(
        open,
        { db: o.db, ...(o.json ? { json: true } : {}) },
        listAuditAction,
        {
          input: () => auditInput(o),
          human: (r) => auditTable(r.entries),
          print: (r) => {
            if (r.cut) cut = Number(o.limit ?? AUDIT_LIST_DEFAULT_LIMIT);
            return r.entries;
          },
        },
      );
      if (cut === undefined) return;
      process.stderr.write(
        `crm-export admin: more entries match than the ${cut} printed (the newest): pass --all for every one, or narrow --since/--until\n`,
      );
      process.exitCode = 1;
    });
}
