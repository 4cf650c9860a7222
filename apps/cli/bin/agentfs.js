#!/usr/bin/env node
// The agentfs command. The code is built into dist/ (`pnpm build` in a clone of the repository).
import { existsSync } from 'node:fs'

const entry = new URL('../dist/cli.js', import.meta.url)
if (!existsSync(entry)) {
  process.stderr.write(
    'agentfs: the CLI is not built yet: run `pnpm build` (or `pnpm --filter @agentfs/cli... build`) in the repository\n',
  )
  process.exit(1)
}
await import(entry.href)
