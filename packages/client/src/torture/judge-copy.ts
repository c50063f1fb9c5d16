// The consumer's copy judged against what it was told (ledger.ts). At a moment between runs: nothing it
// went past is lost, no version goes back, no removal comes back. After a run that must end exact: every
// difference from the lists, each with the rule it breaks and the run and request behind it.
import { type CopyRecord, type Difference, LIST_KINDS, recordKey } from './copy.js';
import { type Delivery, describeDelivery, type Ledger } from './ledger.js';
import { RULES } from './rules.js';
import { describeExchange } from './traffic.js';

const JUDGED = new Set<string>(LIST_KINDS);

export interface CopyJudgement {
  /** Teams that left the key: their records may be missing. */
  leftTeams: ReadonlySet<string>;
  /** Records the history changed on their way (unknown values): the copy must keep them as delivered. */
  overridden: ReadonlySet<string>;
}

const highest = (ds: Delivery[]) => ds.reduce((a, b) => (b.item.version > a.item.version ? b : a));
/** "after run 2: team_x/call/call_y: missing (lists: v1) — rule ... — v1 was delivered in ...". */
const line = (label: string, text: string, rule: string, ...notes: string[]) => {
  const where = notes.filter((n) => n !== '').join('; ');
  return `${label}: ${text} — ${rule}${where ? ` — ${where}` : ''}`;
};

/** Why a record the consumer was given is not in its copy: the answer that came after it, or a kill. */
function whyMissing(ledger: Ledger, d: Delivery): [string, string] {
  const resync = ledger.after(d.team, 'resync', d.e.seq);
  if (resync) return [RULES.resyncKeeps, `a resync began with the answer to ${describeExchange(resync)}`];
  const notReady = ledger.after(d.team, 'notReady', d.e.seq);
  if (notReady) return [RULES.notReady, `lost after the 409 capture_not_ready of ${describeExchange(notReady)}`];
  const gone = ledger.after(d.team, 'gone', d.e.seq);
  if (gone) return [RULES.teamGone, `lost after the 404 team_not_accessible of ${describeExchange(gone)}`];
  if (d.acked && d.acked !== 'run-end' && d.acked.run > d.e.run && ledger.killed.has(d.e.run))
    return [
      RULES.cursorAfterPage,
      `the consumer was killed while it held that page, and ${describeExchange(d.acked)} asked for the page after it`,
    ];
  return [RULES.storeDelivered, ''];
}

/**
 * A copy read between runs (after a run, or after the kit killed one): every record delivered on a page
 * the consumer went past, that the service still serves, is held, at no lower version than delivered
 * since the team's last resync began; nothing whose removal (or its lead's) it went past is held.
 */
export function judgeMoment(
  label: string,
  copy: CopyRecord[],
  lists: ReadonlyMap<string, CopyRecord>,
  ledger: Ledger,
  j: CopyJudgement,
): string[] {
  const held = new Map(copy.filter((r) => JUDGED.has(r.kind)).map((r) => [recordKey(r), r]));
  const out: string[] = [];
  for (const key of ledger.keys()) {
    const ds = ledger.deliveries(key).filter((d) => d.acked !== null);
    const first = ds[0];
    if (!first || j.leftTeams.has(first.team) || !JUDGED.has(first.item.kind)) continue;
    const h = held.get(key);
    const leadRemoval = ledger.removedLead(first);
    if (leadRemoval) {
      if (h)
        out.push(
          line(
            label,
            `${key}: held at v${h.version}`,
            RULES.removedLead,
            describeDelivery(leadRemoval, `the lead ${leadRemoval.item.id}’s`),
          ),
        );
      continue;
    }
    const since = ds.filter((d) => d.e.seq > ledger.lastResync(first.team));
    const latest = highest(since.length > 0 ? since : ds);
    if (latest.item.removed) {
      if (h && since.length > 0)
        out.push(line(label, `${key}: held at v${h.version}`, RULES.removal, describeDelivery(latest)));
      continue;
    }
    if (!lists.has(key)) continue;
    if (!h) {
      const [rule, note] = whyMissing(ledger, latest);
      out.push(
        line(label, `${key}: missing (lists: v${lists.get(key)?.version})`, rule, describeDelivery(latest), note),
      );
    } else if (since.length > 0 && h.version < latest.item.version) {
      const again = since.find((d) => d.item.version === h.version && d.e.seq > latest.e.seq);
      const note = again ? `v${h.version} came again in ${describeExchange(again.e)}` : '';
      out.push(line(label, `${key}: holds v${h.version}`, RULES.higherVersion, describeDelivery(latest), note));
    }
  }
  return out;
}

/** The differences of a copy that must equal the lists, each with the rule it breaks. */
export function judgeExact(label: string, found: Difference[], ledger: Ledger, j: CopyJudgement): string[] {
  return found.map((d) => {
    const ds = ledger.deliveries(d.key);
    const records = ds.filter((x) => !x.item.removed);
    if (d.what === 'twice') return line(label, d.text, RULES.oneRow);
    if (d.what === 'content') {
      const delivered = records.find((x) => x.item.version === d.held);
      const rule = j.overridden.has(d.key) ? RULES.unknown : RULES.storeDelivered;
      return line(label, d.text, rule, delivered ? describeDelivery(delivered) : '');
    }
    if (d.what === 'missing') {
      if (records.length > 0) {
        const latest = highest(records);
        const [rule, note] = whyMissing(ledger, latest);
        return line(label, d.text, rule, describeDelivery(latest), note);
      }
      const last = ledger.lastFeed(d.team);
      const note = last
        ? `never delivered: the last feed answer the consumer got for the team, to ${describeExchange(last)}, ${last.page?.hasMore ? 'said has_more true' : 'was not a page'}`
        : 'never delivered: the consumer never asked for the team’s feed';
      return line(label, d.text, RULES.askAgain, note);
    }
    if (d.what === 'extra') {
      const removal = ds.find((x) => x.item.removed);
      if (removal) return line(label, d.text, RULES.removal, describeDelivery(removal));
      const leadRemoval = ds[0] && ledger.removedLead(ds[0]);
      if (leadRemoval)
        return line(
          label,
          d.text,
          RULES.removedLead,
          describeDelivery(leadRemoval, `the lead ${leadRemoval.item.id}’s`),
        );
      if (ledger.resynced(d.team))
        return line(label, d.text, RULES.resyncSweeps, 'a resync ran and did not deliver it again');
      return line(
        label,
        d.text,
        RULES.storeDelivered,
        ds.length > 0 ? describeDelivery(ds[0] as Delivery) : 'never delivered',
      );
    }
    // A version other than the lists'.
    if ((d.held ?? 0) > (d.want ?? 0) && ledger.resynced(d.team))
      return line(label, d.text, RULES.resyncVersions, 'a resync ran and delivered the lists’ version');
    const wanted = records.find((x) => x.item.version === d.want);
    if (!wanted) return line(label, d.text, RULES.askAgain, `v${d.want} was never delivered`);
    const again = records.find((x) => x.item.version === d.held && x.e.seq > wanted.e.seq);
    if (again)
      return line(
        label,
        d.text,
        RULES.higherVersion,
        describeDelivery(wanted),
        `v${d.held} came again in ${describeExchange(again.e)}`,
      );
    return line(label, d.text, RULES.storeDelivered, describeDelivery(wanted));
  });
}
