import { existsSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The files that take minutes (a few hundred kills or changes each; 150-390 s apiece on 2 cores). On a
 * fresh clone vitest knows no durations and starts the largest files first, so one of these could start
 * late and run alone at the end while the other workers sit idle. They start first; the short files
 * then fill the workers around them.
 */
export const LONG_FILES = [
  'packages/client/test/e2e/crash-sync.test.ts',
  'packages/service/test/store/postgres-feed-order.test.ts',
  'packages/service/test/relay/relay-kill.test.ts',
  'packages/client/test/e2e/torture-consumers.test.ts',
  'packages/client/test/e2e/torture-kit.test.ts',
  'packages/service/test/feed/feed-model.test.ts',
];

const root = dirname(fileURLToPath(import.meta.url));
for (const f of LONG_FILES)
  if (!existsSync(resolve(root, f))) throw new Error(`vitest.sequencer.ts lists ${f}, which is gone`);

export class LongFilesFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (s: TestSpecification) => {
      const i = LONG_FILES.indexOf(relative(root, s.moduleId).split('\\').join('/'));
      return i === -1 ? LONG_FILES.length : i;
    };
    // Array sort is stable: the rest keep vitest's order.
    return sorted.sort((a, b) => rank(a) - rank(b));
  }
}
