import type { Command } from 'commander';
import { AdminError } from '../errors/admin-error.js';
import type { AuditEntry, AuditQuery } from '../store/store.js';
import { type CommonOptions, type OpenStore, run, table } from './admin-run.js';

// `crm-export admin audit list`: the audit trail every changing admin command writes (docs/auth.md,
// "Audit trail"). Reading it is not recorded. It never drops entries silently: the restore procedure
// re-applies revocations from it (docs/backup-restore.md), so a cut list must be seen, by people and by scripts.

export const AUDIT_LIST_DEFAULT_LIMIT = 100;
export const AUDIT_LIST_MAX_LIMIT = 10_000;
/** The store's limit of `--all`: every matching entry (the trail is one row per changing admin command). */
const EVERY_ENTRY = Number.MAX_SAFE_INTEGER;

interface AuditListOptions extends CommonOptions {
  since?: string;
  until?: string;
  action?: string;
  actor?: string;
  target?: string;
  limit?: string;
  all?: boolean;
}

/** An ISO 8601 time from the command line, normalized to the stored form (UTC, milliseconds). */
function isoTime(flag: string, value: string): string {
  // A date and a time with a zone, or a date alone (UTC midnight): the forms Date parses the same everywhere.
  const shape = /^\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,3})?)?(?:Z|[+-]\d{2}:\d{2}))?$/;
  const ms = Date.parse(value);
  if (!shape.test(value) || Number.isNaN(ms))
    throw new AdminError('invalid_argument', `${flag} must be an ISO 8601 time, e.g. 2026-03-01T12:00:00Z`);
  return new Date(ms).toISOString();
}

/** The store query of `audit list`'s options. */
export function auditQuery(o: AuditListOptions): AuditQuery {
  if (o.all && o.limit !== undefined) throw new AdminError('invalid_argument', 'pass --all or --limit, not both');
  const limit = o.all ? EVERY_ENTRY : o.limit === undefined ? AUDIT_LIST_DEFAULT_LIMIT : Number(o.limit);
  if (!o.all && (!Number.isInteger(limit) || limit < 1 || limit > AUDIT_LIST_MAX_LIMIT))
    throw new AdminError('invalid_argument', `--limit must be a whole number from 1 to ${AUDIT_LIST_MAX_LIMIT}`);
  const query: AuditQuery = { limit };
  if (o.since !== undefined) query.since = isoTime('--since', o.since);
  if (o.until !== undefined) query.until = isoTime('--until', o.until);
  if (o.action !== undefined) query.action = o.action;
  if (o.actor !== undefined) query.actor = o.actor;
  if (o.target !== undefined) query.target = o.target;
  return query;
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
      await run(
        open,
        { db: o.db, ...(o.json ? { json: true } : {}) },
        async (store) => {
          const query = auditQuery(o);
          if (o.all) return store.listAudit(query);
          // One entry more than asked tells whether the list would be cut.
          const found = await store.listAudit({ ...query, limit: query.limit + 1 });
          if (found.length <= query.limit) return found;
          cut = query.limit;
          return found.slice(1);
        },
        auditTable,
      );
      if (cut === undefined) return;
      process.stderr.write(
        `crm-export admin: more entries match than the ${cut} printed (the newest): pass --all for every one, or narrow --since/--until\n`,
      );
      process.exitCode = 1;
    });
}
