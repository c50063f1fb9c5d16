// A feed server that generates `total` records on the fly (wire format of /sync/changes), so the bench
// measures the consumer and not a service.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

const KINDS = ['lead', 'lead', 'lead', 'lead', 'call', 'call', 'activity', 'activity', 'activity', 'conversation'];
const at = '2026-01-01T00:00:00.000Z';

function record(n: number, team: string): { kind: string; id: string; version: number; object: object } {
  const kind = KINDS[n % KINDS.length] as string;
  const prefix = { lead: 'lead_', call: 'call_', activity: 'act_', conversation: 'conv_' }[kind] as string;
  const id = `${prefix}${n.toString(36).padStart(8, '0')}`;
  const lead = `lead_${(n - (n % 10)).toString(36).padStart(8, '0')}`;
  const common = { id, object: kind, livemode: true, team, version: 1, updated_at: at };
  const object =
    kind === 'lead'
      ? {
          ...common,
          record_kind: 'lead',
          name: `Name ${n}`,
          surname: null,
          email: `p${n}@example.com`,
          company: null,
          phone: null,
          phone_status: 'missing',
          status: 'new',
          status_set_by: 'human',
          archive_reason: null,
          archived_from_status: null,
          contact_permissions: {
            do_not_contact: false,
            email_opt_out: false,
            email_opt_out_at: null,
            whatsapp_consent: null,
            provenance: { do_not_contact: null, email_opt_out: null, whatsapp_consent: null },
          },
          merged_into: null,
          transferred_to: null,
          revived_at: null,
          pipeline_cleared: false,
          converted_at: null,
          value_at_conversion: null,
          priority: null,
          tags: [],
          board: null,
          stage: null,
          assignees: null,
          estimated_value: null,
          estimated_value_currency: null,
          source: 'manual',
          source_channel: null,
          source_detail: null,
          source_provenance: 'member_editable',
          created_at: at,
        }
      : kind === 'call'
        ? {
            ...common,
            lead,
            direction: 'inbound',
            started_at: at,
            duration_seconds: 42,
            outcome: 'answered_human',
            outcome_basis: 'inbound_verdict',
          }
        : kind === 'activity'
          ? {
              ...common,
              lead,
              occurred_at: at,
              actor_kind: 'human',
              stage_snapshot: null,
              value_snapshot: null,
              type: 'status_changed',
              from: null,
              to: 'contacted',
            }
          : {
              ...common,
              lead,
              channel: 'whatsapp',
              status: 'open',
              assignees: [],
              started_at: at,
              last_message_at: at,
              last_inbound_at: at,
              last_outbound_at: null,
              closed_at: null,
              inbound_count: 3,
              outbound_count: 0,
              created_at: at,
            };
  return { kind, id, version: 1, object };
}

export async function startSyntheticFeed(
  total: number,
  team = 'team_bench',
): Promise<{ url: string; key: string; close(): Promise<void> }> {
  const key = 'crmx_live_BENCHbench000benchbenchbenchbenchbench00';
  const list = (data: unknown[]) => JSON.stringify({ object: 'list', data, has_more: false, next_cursor: null });
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    res.setHeader('content-type', 'application/json');
    if (url.pathname === '/v1/teams') {
      return res.end(
        list([{ id: team, object: 'team', livemode: true, name: 'Bench', timezone: 'UTC', default_country: null }]),
      );
    }
    if (url.pathname !== '/v1/sync/changes') return res.end(list([]));
    const from = Number(url.searchParams.get('cursor') ?? 0);
    const limit = Number(url.searchParams.get('limit') ?? 25);
    const to = Math.min(total, from + limit);
    const data = [];
    for (let n = from; n < to; n++) data.push(record(n, team));
    res.end(JSON.stringify({ object: 'list', data, has_more: to < total, next_cursor: String(to) }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    key,
    close: () => new Promise((r) => server.close(() => r())),
  };
}
