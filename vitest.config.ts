import { defineConfig } from 'vitest/config';

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
  },
});
