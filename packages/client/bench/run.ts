// Initial sync of N records (default 1,000,000) into a SQLite mirror, against the feed read alone in the
// same run: items per second of each, their ratio, and the sync process's peak memory.
//   npm run bench -w @crm-export/client [-- --records N]
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { startSyntheticFeed } from './synthetic-feed.js';

const arg = process.argv.indexOf('--records');
const total = arg > 0 ? Number(process.argv[arg + 1]) : 1_000_000;
const here = dirname(fileURLToPath(import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'crm-sync-bench-'));
const feed = await startSyntheticFeed(total);
// The feed server runs in this process, so each phase runs as an asynchronous child.
const phase = async (name: string) => {
  const { stdout: out } = await promisify(execFile)(
    process.execPath,
    ['--import', 'tsx', join(here, 'sync-child.ts'), name, feed.url, feed.key, `sqlite:${join(dir, 'mirror.db')}`],
    { encoding: 'utf8', maxBuffer: 1 << 20 },
  );
  return JSON.parse(out.trim().split('\n').at(-1) as string) as { items: number; seconds: number; maxRssMb: number };
};
try {
  const read = await phase('read');
  const sync = await phase('sync');
  const readRate = read.items / read.seconds;
  const syncRate = sync.items / sync.seconds;
  const report = {
    records: total,
    feed_read_items_per_second: Math.round(readRate),
    sync_items_per_second: Math.round(syncRate),
    sync_to_read_ratio: Number((syncRate / readRate).toFixed(3)),
    sync_seconds: Number(sync.seconds.toFixed(1)),
    sync_peak_rss_mb: Math.round(sync.maxRssMb),
    read_peak_rss_mb: Math.round(read.maxRssMb),
  };
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
} finally {
  await feed.close();
  rmSync(dir, { recursive: true, force: true });
}
