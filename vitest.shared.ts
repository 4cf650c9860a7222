import { defineConfig } from 'vitest/config'

/** Resolve workspace packages to their TypeScript source, so tests never need a prior build. */
const conditions = ['@agentfs/source', 'module', 'node', 'development|production']

export default defineConfig({
  resolve: { conditions },
  ssr: { resolve: { conditions, externalConditions: ['@agentfs/source'] } },
  test: {
    include: ['test/**/*.test.ts'],
    // A guard against hangs, not a speed check: on a loaded two-core CI machine, tests that take
    // 20 s alone (a remote driver's 600 writes, a CLI building its examples' world) took over 30.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
  },
})
