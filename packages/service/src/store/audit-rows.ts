import type { AuditEntry } from './store.js';

// The audit table's row format, shared by both backends: target ids comma separated, details as JSON.

/** The stored columns of an audit entry: at, actor, action, target, outcome, details. */
export function auditColumns(e: AuditEntry): [string, string, string, string, string, string] {
  return [e.at, e.actor, e.action, e.target.join(','), e.outcome, JSON.stringify(e.details)];
}

/** An audit row read back. */
export function toAuditEntry(row: Record<string, unknown>): AuditEntry {
  const target = String(row.target);
  return {
    at: String(row.at),
    actor: String(row.actor),
    action: String(row.action),
    target: target ? target.split(',') : [],
    outcome: String(row.outcome),
    details: JSON.parse(String(row.details)) as Record<string, unknown>,
  };
}
