import { defineConfig, type Options } from 'tsup'
import shared from '../../tsup.shared.js'

// Two entries: the main API and the driver kit (`@agentfs/core/driver-kit`).
export default defineConfig({
  ...(shared as Options),
  entry: { index: 'src/index.ts', 'driver-kit': 'src/driver-kit/index.ts' },
})
