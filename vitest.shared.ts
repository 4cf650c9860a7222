import { defineConfig } from 'vitest/config'

/** Resolve workspace packages to their TypeScript source, so tests never need a prior build. */
const conditions = ['@agentfs/source', 'module', 'node', 'development|production']

export default defineConfig({
  resolve: { conditions },
  ssr: { resolve: { conditions, externalConditions: ['@agentfs/source'] } },
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
  },
})
