import type { Lead } from '../../src/schemas/records.js';

// The rules of the spec's Lead table that hold between fields, as a list of broken ones (empty
// when the record keeps every rule). Tests run it over every lead an endpoint returns.

export function leadViolations(lead: Lead): string[] {
  const broken: string[] = [];
  const rule = (ok: boolean, text: string) => {
    if (!ok) broken.push(`${lead.id}: ${text}`);
  };
  rule(lead.object === 'lead', 'object is always lead');
  rule(lead.record_kind === 'lead' || lead.status === null, 'status is null for a client record');
  rule(lead.status !== null || lead.status_set_by === null, 'status_set_by is null when status is null');
  rule(
    lead.status === 'archived' || lead.archived_from_status === null,
    'archived_from_status is null while not archived',
  );
  rule((lead.phone !== null) === (lead.phone_status === 'valid'), 'phone is set exactly when phone_status is valid');
  rule(lead.phone === null || /^\+[1-9][0-9]{1,14}$/.test(lead.phone), 'phone is E.164');
  rule(
    (lead.converted_at !== null) === (lead.status === 'converted'),
    'converted_at is set exactly while status is converted',
  );
  rule(lead.estimated_value_currency === null, 'estimated_value_currency is always null');
  rule(lead.source !== null || lead.source_provenance === null, 'source_provenance is null when source is null');
  if (lead.pipeline_cleared) {
    for (const field of [
      'board',
      'stage',
      'priority',
      'assignees',
      'estimated_value',
      'source',
      'source_detail',
      'source_provenance',
    ] as const) {
      rule(lead[field] === null, `pipeline_cleared leaves ${field} null`);
    }
  }
  if (lead.assignees !== null) {
    rule(
      lead.assignees.every((a, i, all) => i === 0 || (all[i - 1] as string) < a),
      'assignees are sorted',
    );
  }
  rule(
    lead.transferred_to === null || typeof lead.transferred_to.team === 'string',
    'transferred_to.team is always set',
  );
  rule(lead.merged_into !== lead.id, 'a lead is never merged into itself');
  rule(Date.parse(lead.updated_at) >= Date.parse(lead.created_at), 'updated_at is not before created_at');
  return broken;
}
