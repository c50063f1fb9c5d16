import type { Command } from 'commander';
import { systemClock } from '../clock.js';
import { DEFAULT_LIMITS } from '../config.js';
import { capturePending } from '../feed/capture.js';
import { markRestore } from '../feed/feed-epoch.js';
import { trimFeedOnce } from '../feed/feed-jobs.js';
import { type CommonOptions, common, type OpenStore, run } from './admin-run.js';

// `crm-export admin feed ...`: the changes feed's operator commands (docs/feed.md).

/** Adds `admin feed mark-restore|trim|capture` under the program's `admin` command (created when missing). */
export function registerFeedCommands(program: Command, open: OpenStore): void {
  const admin = program.commands.find((c) => c.name() === 'admin') ?? program.command('admin');
  const feed = admin.command('feed').description('the changes feed: restore marks, retention, capture');

  common(
    feed
      .command('mark-restore')
      .description('after restoring a backup: every older feed cursor gets 409 resync_required'),
  ).action((o: CommonOptions) =>
    run(
      open,
      o,
      async (store) => ({ markedRestore: true, ...(await markRestore(store)) }),
      (r) => `restore marked: feed epoch ${r.previous} -> ${r.epoch}; consumers resync on their next read`,
    ),
  );

  common(feed.command('trim').description('run the retention job once (45-day removals, superseded entries)')).action(
    (o: CommonOptions) =>
      run(
        open,
        o,
        async (store) => ({ trimmed: await trimFeedOnce(store, systemClock, DEFAULT_LIMITS) }),
        (r) => `feed entries trimmed: ${r.trimmed}`,
      ),
  );

  common(feed.command('capture').description('prepare every team a key names that is not prepared yet')).action(
    (o: CommonOptions) =>
      run(
        open,
        o,
        async (store) => ({ captured: await capturePending(store, systemClock) }),
        (r) => (r.captured.length ? `teams prepared: ${r.captured.join(', ')}` : 'no team waiting to be prepared'),
      ),
  );
}
