// One measured phase in its own process, so peak memory is the consumer's alone.
//   read: page through the feed without storing.  sync: the sync engine into a SQLite mirror.
import { CrmExportClient } from '../src/client/crm-export-client.js';
import { MirrorStore } from '../src/sync/mirror-store.js';
import { openMirror } from '../src/sync/open-mirror.js';
import { SyncEngine } from '../src/sync/sync-engine.js';

const [phase, baseUrl, key, into] = process.argv.slice(2) as [string, string, string, string];
const client = new CrmExportClient({ baseUrl, key });
const started = process.hrtime.bigint();
let items = 0;
if (phase === 'read') {
  const team = (await client.teams()).data[0]?.id as string;
  let cursor: string | undefined;
  for (;;) {
    const page = await client.changes({ team, cursor, limit: 100 });
    items += page.data.length;
    cursor = page.next_cursor;
    if (!page.has_more) break;
  }
} else {
  const mirror = await openMirror(into);
  const engine = new SyncEngine({
    client,
    store: new MirrorStore(mirror.db),
    key,
    once: true,
    onProgress: (p) => {
      items = p.items;
    },
  });
  await engine.run();
  await mirror.close();
}
const seconds = Number(process.hrtime.bigint() - started) / 1e9;
process.stdout.write(`${JSON.stringify({ phase, items, seconds, maxRssMb: process.resourceUsage().maxRSS / 1024 })}\n`);
