// A history over a service that changes while the consumer reads it (it needs `--start-service`): a
// record updated and one deleted between two pages, removals of records the consumer holds (a lead
// erased with its facets and activities, one deleted), a merge, a transfer, bookings that lose their lead,
// and a page read before the changes served again after them.
import type { CopyRecord } from './copy.js';
import {
  counter,
  editPage,
  type FeedItem,
  type FeedPage,
  type History,
  type HistoryContext,
  isFeed,
  noFaults,
  plain,
  readPage,
  tag,
} from './history-tools.js';

const at = () => new Date().toISOString();
const rows = (ctx: HistoryContext, team: string, kind: string) =>
  [...ctx.expected.values()].filter((r) => r.team === team && r.kind === kind);
/** A lead a merge or a transfer may take: not archived, merged or transferred. */
const open = (r: CopyRecord) =>
  r.record.status !== 'archived' && r.record.merged_into == null && r.record.transferred_to == null;
/** Items of `kind` on a page that the service still serves. */
const onPage = (ctx: HistoryContext, team: string, items: FeedItem[], kind: string) =>
  items.filter((i) => i.kind === kind && i.object && ctx.expected.has(`${team}/${kind}/${i.id}`)).map((i) => i.id);

/** What run 2 of `changes-while-read` does to the erased lead's removal. */
interface Erased {
  lead: string;
  /** `kind/id` of its facets and activities: their removals are left out (the contract does not promise them). */
  children: Set<string>;
  /** Its attribution and an activity again, each at a version above the one it had: ignored by a correct consumer. */
  late: FeedItem[];
}

/**
 * A lead erased (one of the first page's when it can), one deleted (each with a booking), two merged, one
 * transferred to the second team.
 */
function removalsAndMoves(ctx: HistoryContext, a: string, b: string, first: FeedItem[], id: string) {
  const withBooking = new Set(rows(ctx, a, 'booking').map((r) => r.record.lead));
  const withCall = new Set(rows(ctx, a, 'call').map((r) => r.record.lead));
  const onFirst = new Set(onPage(ctx, a, first, 'lead'));
  const leadsA = rows(ctx, a, 'lead')
    .filter(open)
    .sort((x, y) => Number(onFirst.has(y.id)) - Number(onFirst.has(x.id)));
  const booked = leadsA.filter((l) => withBooking.has(l.id));
  const erase = booked.find((l) => withCall.has(l.id)) ?? booked[0] ?? leadsA[0];
  const remove = booked.find((l) => l !== erase) ?? leadsA.find((l) => l !== erase);
  const move = leadsA.find((l) => l !== erase && l !== remove);
  const [kept, duplicate] = rows(ctx, b, 'lead').filter(open);
  const events: object[] = [];
  let erased: Erased | undefined;
  if (erase) {
    events.push({ type: 'lead.erased', at: at(), lead: erase.id });
    const children = [...ctx.expected.values()].filter(
      (r) =>
        r.team === a &&
        ((r.id === erase.id && r.kind.startsWith('lead_')) || (r.kind === 'activity' && r.record.lead === erase.id)),
    );
    const again = (r: CopyRecord | undefined): FeedItem[] =>
      r ? [{ kind: r.kind, id: r.id, version: r.version + 2, object: { ...r.record, version: r.version + 2 } }] : [];
    erased = {
      lead: erase.id,
      children: new Set(children.map((r) => `${r.kind}/${r.id}`)),
      late: [
        ...again(children.find((r) => r.kind === 'lead_attribution')),
        ...again(children.find((r) => r.kind === 'activity')),
      ],
    };
  }
  if (remove) events.push({ type: 'lead.deleted', at: at(), lead: remove.id });
  if (kept && duplicate) events.push({ type: 'lead.merged', at: at(), kept: kept.id, duplicate: duplicate.id });
  if (move)
    events.push({ type: 'lead.transferred', at: at(), lead: move.id, to_team: b, new_lead: `lead_Torture${id}` });
  return { events, erased };
}

/** Leaves out the removals of the erased lead's facets and activities, and sends them again after its removal. */
function lateChildren(p: FeedPage, erased: Erased): number {
  let sent = 0;
  const data: FeedItem[] = [];
  for (const item of p.data) {
    if (item.removed && erased.children.has(`${item.kind}/${item.id}`)) continue;
    data.push(item);
    if (item.kind === 'lead' && item.id === erased.lead && item.removed) {
      data.push(...erased.late);
      sent++;
    }
  }
  p.data = data;
  return sent;
}

export const CHANGE_HISTORIES: History[] = [
  {
    name: 'changes-while-read',
    summary:
      'run 1: after the first team’s first feed page, a lead on it gets a new version and a call on it is deleted; between runs a lead with a booking is erased, another deleted, two leads of the second team merged and one transferred to it; run 2 reads all that, the erased lead’s facet and activity removals left out and its attribution and an activity sent again after its removal at higher versions; run 3’s first feed request of the first team is answered with run 1’s first page again (items and cursor) and the consumer is killed at its next request; run 4 finishes',
    runs: 4,
    minTeams: 2,
    changesService: true,
    kills: [3],
    exactAfter: [1, 2, 4],
    start(ctx) {
      const [a, b] = ctx.teams as [string, string];
      const id = tag();
      let first: Buffer | undefined;
      let changed = false;
      let erased: Erased | undefined;
      let late = 0;
      let served = false;
      return plain({
        script(run, control) {
          const c = counter();
          if (run === 1)
            return {
              plan: noFaults(),
              rewrite(r, body) {
                if (isFeed(r) && r.team === a && c.count(r) === 1) first = body;
                return body;
              },
              async before(r) {
                if (!isFeed(r) || r.team !== a || c.count(r) !== 2 || changed || !first) return;
                changed = true;
                const items = readPage(first).data;
                const [lead] = onPage(ctx, a, items, 'lead');
                const [call] = onPage(ctx, a, items, 'call');
                const events: object[] = [];
                if (lead) events.push({ type: 'lead.updated', at: at(), lead, company: `Torture ${id}` });
                if (call) events.push({ type: 'call.deleted', at: at(), call });
                await ctx.change(events);
              },
            };
          if (run === 2)
            return {
              plan: noFaults(),
              rewrite(r, body) {
                if (!isFeed(r) || r.team !== a || !erased) return body;
                const gone = erased;
                return editPage(body, (p) => {
                  late += lateChildren(p, gone);
                });
              },
            };
          // A page read before every change, served again after them: nothing in it may win.
          return {
            plan: noFaults(),
            rewrite(r, body) {
              if (run !== 3 || !isFeed(r) || r.team !== a || c.count(r) !== 1 || !first) return body;
              served = true;
              return first;
            },
            async before(r) {
              if (run === 3 && served && r.team === a)
                await control.killNow(`at its next request after ${a}'s page served again`);
            },
          };
        },
        async after(run) {
          if (run !== 1) return;
          const changes = removalsAndMoves(ctx, a, b, first ? readPage(first).data : [], id);
          erased = changes.erased;
          await ctx.change(changes.events);
        },
        incomplete: () => [
          ...(changed ? [] : [`${a}: no second feed request in run 1 to change the service before`]),
          ...(late > 0 ? [] : [`${a}: the erased lead’s removal never reached the consumer in run 2`]),
          ...(served ? [] : [`${a}: no feed request in run 3 to answer with the old page`]),
        ],
      });
    },
  },
];
