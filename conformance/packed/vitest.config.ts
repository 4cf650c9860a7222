import { defineConfig, mergeConfig } from 'vitest/config'
import shared from '../../vitest.shared.js'

// Packing and installing take seconds per project; the scenarios share one set of tarballs.
export default mergeConfig(
  shared,
  defineConfig({ test: { testTimeout: 180_000, hookTimeout: 300_000, fileParallelism: false } }),
)
