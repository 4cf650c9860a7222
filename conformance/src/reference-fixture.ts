import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

/** The SQL export of a database written by the reference SDK `agentfs-sdk` 0.6.4. */
export function referenceSdkScript(): string {
  return readFileSync(
    fileURLToPath(new URL('../fixtures/agentfs-sdk-0.6.4.sql', import.meta.url)),
    'utf8',
  )
}

/** What the reference fixture holds (see scripts/make-reference-fixture.mjs). */
export const REFERENCE_CONTENT = {
  files: {
    '/docs/README.md': new TextEncoder().encode('Hello from agentfs-sdk 0.6.4\n'),
  } as Record<string, Uint8Array>,
  bigFile: { path: '/docs/big.bin', length: 10_000 },
  rowCounts: { kv_store: 2, tool_calls: 4 } as Record<string, number>,
  pendingToolCalls: 1,
}
