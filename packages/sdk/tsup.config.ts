import { defineConfig } from 'tsup'
import shared from '../../tsup.shared.js'

// The sync worker is its own entry: `agent.nodeFs()` starts it on a worker thread.
export default defineConfig({
  ...(shared as object),
  entry: ['src/index.ts', 'src/sync-worker.ts'],
})
