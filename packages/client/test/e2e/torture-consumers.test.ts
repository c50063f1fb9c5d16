// The kit checks itself: a small consumer written from the docs passes every history, and the same
// consumer with one bug of those consumers really make fails the histories that target it.
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DemoService, startDemoService } from '../../src/torture/demo-service.js';
import { HISTORIES } from '../../src/torture/histories.js';
import { runTorture } from '../../src/torture/torture.js';
import { SERVICE_BIN, serviceUnavailableReason } from './service-process.js';

const here = dirname(fileURLToPath(import.meta.url));
const SERVICE_COMMAND = `${JSON.stringify(process.execPath)} ${JSON.stringify(SERVICE_BIN)}`;
const SMALL_CONSUMER = `${JSON.stringify(process.execPath)} ${JSON.stringify(resolve(here, '../fixtures/small-consumer.mjs'))}`;

/** Each bug of the small consumer, the histories that target it, and what their verdict must say. */
const BUGS: [bug: string, histories: string[], says: RegExp][] = [
  ['ignore-has-more', ['clean'], /^team_\w+\/\w+\/\w+: missing \(lists: v\d+\)$/],
  ['fatal-410', ['expired-cursor-mid-initial-sync'], /^run 1 exited with 1$/],
  [
    'no-sweep',
    ['expired-cursor-mid-initial-sync', 'resync-after-restore'],
    /^team_\w+\/\w+\/\w+_TortureGhost\d: held, but the lists do not serve it$/,
  ],
  ['keep-versions', ['resync-after-restore'], /^team_\w+\/call\/call_\w+: holds v1001, lists: v1$/],
];

const unavailable = serviceUnavailableReason();
if (unavailable) console.warn(`skipping the torture kit's own consumers: ${unavailable}`);

describe.skipIf(unavailable !== null)(
  `torture kit: a consumer written from the docs, and its bugs${unavailable === null ? '' : ` (skipped: ${unavailable})`}`,
  () => {
    let service: DemoService;
    beforeAll(async () => {
      service = await startDemoService(SERVICE_COMMAND);
    });
    afterAll(async () => {
      await service?.close();
    });
    const torture = (bug: string, histories?: string[]) =>
      runTorture({
        baseUrl: service.baseUrl,
        key: service.key,
        holdBackMs: 0,
        consumer: bug ? `SMALL_CONSUMER_BUG=${bug} ${SMALL_CONSUMER}` : SMALL_CONSUMER,
        ...(histories ? { histories } : {}),
      });

    it('the small consumer written from the docs passes every history', { timeout: 300_000 }, async () => {
      const result = await torture('');
      expect(result.verdicts.filter((v) => !v.pass).map((v) => ({ history: v.history, failures: v.failures }))).toEqual(
        [],
      );
      expect(result.verdicts.map((v) => v.history)).toEqual(HISTORIES.map((h) => h.name));
    });

    for (const [bug, histories, says] of BUGS) {
      it(`a consumer with the bug ${bug} fails ${histories.join(', ')}`, { timeout: 120_000 }, async () => {
        const result = await torture(bug, histories);
        for (const v of result.verdicts) {
          expect(v.pass, v.history).toBe(false);
          expect(v.failures.filter((f) => says.test(f)).length, v.failures.join('\n')).toBeGreaterThan(0);
        }
      });
    }

    it('a consumer that gives up on 410 fails with its exit and its own words', async () => {
      const result = await torture('fatal-410', ['expired-cursor-mid-initial-sync']);
      const [v] = result.verdicts;
      expect(v?.failures).toEqual(['run 1 exited with 1']);
      expect(v?.stderrTail).toContain('the feed answered 410');
    });
  },
);
