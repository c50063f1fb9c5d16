import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';
import { LongFilesFirst } from './vitest.sequencer.js';

export default defineConfig({
  // Tests run the TypeScript sources: this condition resolves `@crm-export/client` to its src/ (see its
  // package.json exports), while Node and tsc use the compiled dist/. The rest are Vite's defaults.
  ssr: { resolve: { conditions: ['@crm-export/source', 'module', 'node', 'development|production'] } },
  test: {
    include: ['packages/*/src/**/*.test.ts', 'packages/*/test/**/*.test.ts'],
    globalSetup: ['./vitest.global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Most of the suite's time is spent waiting on processes it spawned, on timers and on sockets (a run
    // with one worker kept 2 cores about a third busy), so it runs at least 3 files at once. Vitest's
    // default is one worker less than the cores: a single worker on a 2-core machine.
    maxWorkers: Math.max(3, availableParallelism() - 1),
    sequence: { sequencer: LongFilesFirst },
  },
});
