import { describe, expect, it } from 'vitest';
import { lead } from './fixtures.js';
import { leadViolations } from './lead-invariants.js';

// The checker the endpoint tests rely on must catch each broken rule, or those tests could not fail.

describe('the Lead table rules checker', () => {
  it('accepts a lead that keeps every rule', () => {
    expect(leadViolations(lead('lead_ok', 'team_A1'))).toEqual([]);
  });

  it.each([
    ['a client has no status', { record_kind: 'client' as const }],
    ['status_set_by is null when status is null', { status: null }],
    ['archived_from_status is null while not archived', { archived_from_status: 'new' as const }],
    ['phone is set exactly when phone_status is valid', { phone_status: 'invalid' as const }],
    ['converted_at is set exactly while status is converted', { status: 'converted' as const }],
    ['pipeline_cleared leaves board null', { pipeline_cleared: true, board: 'brd_1' }],
    ['assignees are sorted', { assignees: ['mem_b', 'mem_a'] }],
    ['source_provenance is null when source is null', { source: null }],
  ])('reports: %s', (_rule, over) => {
    expect(leadViolations(lead('lead_bad', 'team_A1', over)).length).toBeGreaterThan(0);
  });
});
