// The consumer's copy as the torture kit reads it, the lists it is judged against, and the comparison.
import { existsSync, readFileSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import type { CrmExportClient } from '../client/crm-export-client.js';
import { KNOWN_FEED_KINDS } from '../client/types.js';

/** The feed kinds the lists serve (every kind the client knows), and so the kinds a copy is judged on. */
export const LIST_KINDS = KNOWN_FEED_KINDS;
const JUDGED = new Set<string>(LIST_KINDS);

/** One record of a copy: a line of the copy file, or a record the lists serve. */
export interface CopyRecord {
  team: string;
  kind: string;
  id: string;
  version: number;
  record: Record<string, unknown>;
}

export const recordKey = (r: { team: string; kind: string; id: string }) => `${r.team}/${r.kind}/${r.id}`;

/**
 * Reads a copy file: one JSON object a line, `{"team","kind","id","version","record"}`; blank lines are
 * skipped. A line that breaks the format is reported with its number, never echoed (it holds personal data).
 */
export function readCopy(path: string): { records: CopyRecord[]; problems: string[] } {
  if (!existsSync(path)) return { records: [], problems: ['the consumer wrote no copy file'] };
  const records: CopyRecord[] = [];
  const problems: string[] = [];
  const lines = readFileSync(path, 'utf8').split('\n');
  lines.forEach((line, i) => {
    if (line.trim() === '') return;
    let v: unknown;
    try {
      v = JSON.parse(line);
    } catch {
      problems.push(`copy line ${i + 1} is not JSON`);
      return;
    }
    const r = v as Partial<CopyRecord>;
    const ok =
      typeof r === 'object' &&
      r !== null &&
      typeof r.team === 'string' &&
      typeof r.kind === 'string' &&
      typeof r.id === 'string' &&
      Number.isInteger(r.version) &&
      typeof r.record === 'object' &&
      r.record !== null &&
      !Array.isArray(r.record);
    if (!ok) problems.push(`copy line ${i + 1} lacks team, kind, id, an integer version or a record object`);
    else records.push(r as CopyRecord);
  });
  return { records, problems };
}

/**
 * Every record the lists serve for `teams`, read straight from the service: boards, leads, calls,
 * conversations and bookings from their lists; each lead's facets from `/leads/{id}` and its activities
 * from `/leads/{id}/activities`.
 */
export async function readLists(client: CrmExportClient, teams: string[]): Promise<Map<string, CopyRecord>> {
  const out = new Map<string, CopyRecord>();
  const put = (team: string, kind: string, record: unknown) => {
    const r = record as Record<string, unknown>;
    const entry = { team, kind, id: String(r.id), version: Number(r.version), record: r };
    out.set(recordKey(entry), entry);
  };
  for (const team of teams) {
    const c = client.forTeam(team);
    for await (const b of c.iterate.boards({ limit: 100 })) put(team, 'board', b);
    const leads: string[] = [];
    for await (const l of c.iterate.leads({ limit: 100 })) {
      put(team, 'lead', l);
      leads.push(l.id);
    }
    for await (const x of c.iterate.calls({ limit: 100 })) put(team, 'call', x);
    for await (const x of c.iterate.conversations({ limit: 100 })) put(team, 'conversation', x);
    for await (const x of c.iterate.bookings({ limit: 100 })) put(team, 'booking', x);
    // A few leads at a time: the kit reads the lists again after every change it makes.
    let next = 0;
    const worker = async () => {
      for (let id = leads[next++]; id !== undefined; id = leads[next++]) {
        const detail = (await client.lead(id)) as unknown as Record<string, unknown>;
        if (detail.attribution) put(team, 'lead_attribution', detail.attribution);
        if (detail.response) put(team, 'lead_response', detail.response);
        for await (const a of client.iterate.leadActivities(id, { limit: 100 })) put(team, 'activity', a);
      }
    };
    await Promise.all(Array.from({ length: LEAD_READERS }, worker));
  }
  return out;
}

const LEAD_READERS = 6;

export interface CompareOptions {
  /** Teams whose records may be missing from the copy (a team that left the key); held ones must still be right. */
  leftTeams?: ReadonlySet<string>;
}

/** One difference between a copy and the records it should hold. */
export interface Difference {
  key: string;
  team: string;
  what: 'twice' | 'missing' | 'version' | 'content' | 'extra';
  /** The version the copy holds. */
  held?: number;
  /** The version expected. */
  want?: number;
  /** As the verdict prints it: the record's key, versions and the names of differing fields. */
  text: string;
}

export interface Comparison {
  /** Every difference, worst first is not promised; the verdict prints the first few. */
  differences: string[];
  /** The same differences, for the kit to say which rule each one breaks. */
  found: Difference[];
  /** Records of the lists compared. */
  compared: number;
  /** Copy lines of kinds the lists do not serve (an unknown kind kept): allowed, not judged. */
  unjudged: number;
}

/** The copy against the expected records: same keys, versions and JSON; nothing held twice or left behind. */
export function compareCopy(
  expected: ReadonlyMap<string, CopyRecord>,
  copy: CopyRecord[],
  options: CompareOptions = {},
): Comparison {
  const found: Difference[] = [];
  const add = (d: Omit<Difference, 'team'>, r: { team: string }) => found.push({ ...d, team: r.team });
  const held = new Map<string, CopyRecord>();
  let unjudged = 0;
  for (const r of copy) {
    if (!JUDGED.has(r.kind)) {
      unjudged++;
      continue;
    }
    const k = recordKey(r);
    if (held.has(k)) add({ key: k, what: 'twice', text: `${k}: held twice` }, r);
    held.set(k, r);
  }
  for (const [k, want] of expected) {
    const got = held.get(k);
    if (!got) {
      if (!options.leftTeams?.has(want.team))
        add({ key: k, what: 'missing', want: want.version, text: `${k}: missing (lists: v${want.version})` }, want);
      continue;
    }
    const versions = { held: got.version, want: want.version };
    if (got.version !== want.version)
      add({ key: k, what: 'version', ...versions, text: `${k}: holds v${got.version}, lists: v${want.version}` }, want);
    else if (!isDeepStrictEqual(got.record, want.record))
      add(
        {
          key: k,
          what: 'content',
          ...versions,
          text: `${k}: v${got.version} content differs (${differingFields(got.record, want.record)})`,
        },
        want,
      );
  }
  for (const [k, r] of held)
    if (!expected.has(k))
      add({ key: k, what: 'extra', held: r.version, text: `${k}: held, but the lists do not serve it` }, r);
  return { differences: found.map((d) => d.text), found, compared: expected.size, unjudged };
}

/** Names of the top-level fields that differ (never their values: they are personal data). */
function differingFields(a: Record<string, unknown>, b: Record<string, unknown>): string {
  const names = new Set([...Object.keys(a), ...Object.keys(b)]);
  const differ = [...names].filter((n) => !isDeepStrictEqual(a[n], b[n]));
  return differ.length > 0 ? `fields ${differ.slice(0, 5).join(', ')}` : 'fields differ';
}
