import type { Command } from 'commander';
import { systemClock } from '../clock.js';
import { markRestore } from '../feed/feed-epoch.js';
import { trimFeedOnce } from '../feed/feed-jobs.js';
import { readLimits } from '../settings/read-limits.js';
import { capturePending } from '../write/commands/capture.js';
import { type CommonOptions, common, confirmed, type OpenStore, run, yesOption } from './admin-run.js';

// `crm-export admin feed ...`: the changes feed's operator commands (docs/feed.md).

/** Adds `admin feed mark-restore|trim|capture` under the program's `admin` command (created when missing). */
export function registerFeedCommands(program: Command, open: OpenStore): void {
  const admin = program.commands.find((c) => c.name() === 'admin') ?? program.command('admin');
  const feed = admin.command('feed').description('the changes feed: restore marks, retention, capture');

  yesOption(
    common(
      feed
        .command('mark-restore')
        .description('after restoring a backup: every older feed cursor gets 409 resync_required (asks, or --yes)'),
    ),
  ).action((o: CommonOptions & { yes?: boolean }) =>
    confirmed(
      o,
      'every consumer cursor issued so far stops working (409 resync_required), which cannot be undone',
      () =>
        run(
          open,
          o,
          async (store) => ({ markedRestore: true, ...(await markRestore(store)) }),
          (r) => `restore marked: feed epoch ${r.previous} -> ${r.epoch}; consumers resync on their next read`,
          {
            action: 'feed.mark_restore',
            fromResult: (r) => ({ details: { previousEpoch: r.previous, epoch: r.epoch } }),
          },
        ),
    ),
  );

  common(feed.command('trim').description('run the retention job once (45-day removals, superseded entries)')).action(
    (o: CommonOptions) =>
      run(
        open,
        o,
        async (store) => ({ trimmed: await trimFeedOnce(store, systemClock, readLimits()) }),
        (r) => `feed entries trimmed: ${r.trimmed}`,
        { action: 'feed.trim', fromResult: (r) => ({ details: { trimmed: r.trimmed } }) },
      ),
  );

  common(feed.command('capture').description('prepare every team a key names that is not prepared yet')).action(
    (o: CommonOptions) =>
      run(
        open,
        o,
        async (store) => ({ captured: await capturePending(store, systemClock) }),
        (r) => (r.captured.length ? `teams prepared: ${r.captured.join(', ')}` : 'no team waiting to be prepared'),
        { action: 'feed.capture', fromResult: (r) => ({ target: r.captured }) },
      ),
  );
}
