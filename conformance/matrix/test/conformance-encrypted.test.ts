import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { runConformance } from '@agentfs/conformance'
import { type Driver, openDatabase } from '@agentfs/core'
import { betterSqlite3Driver } from '@agentfs/driver-better-sqlite3'
import { libsqlDriver } from '@agentfs/driver-libsql'
import { tursoDriver } from '@agentfs/driver-turso'
import { createFileSystem } from '@agentfs/fs'
import { createKvStore } from '@agentfs/kv'
import { createToolCalls } from '@agentfs/tool-calls'
import { describe, expect, test } from 'vitest'

// The whole conformance suite on encrypted files, for each engine that encrypts: the same
// results and the same canonical dumps (the goldens) as on plain files.
const TURSO_KEY = '4e'.repeat(32)
const engines: Record<string, (path: string) => Driver> = {
  'better-sqlite3 (sqlcipher)': (path) =>
    betterSqlite3Driver({ path, busyTimeoutMs: 100, key: 'conformance passphrase' }),
  'better-sqlite3 (chacha20)': (path) =>
    betterSqlite3Driver({ path, busyTimeoutMs: 100, key: 'conformance', cipher: 'chacha20' }),
  'libsql (encryptionKey)': (path) =>
    libsqlDriver({ url: `file:${path}`, busyTimeoutMs: 100, encryptionKey: 'conformance' }),
  'turso (aegis256)': (path) => tursoDriver({ path, busyTimeoutMs: 100, key: TURSO_KEY }),
}

for (const [name, driverOf] of Object.entries(engines))
  runConformance({
    name: `encrypted: ${name}`,
    createDriver: ({ tempDir, slot }) => driverOf(`${tempDir}/db-${slot}.sqlite`),
  })

const MARKER = 'MARKER-2a6f-agent-plaintext'

describe('encrypted files hold no plaintext: database, WAL and every file beside them', () => {
  for (const [name, driverOf] of Object.entries(engines))
    test(name, async () => {
      const dir = await mkdtemp(join(tmpdir(), 'agentfs-encrypted-'))
      try {
        const path = join(dir, 'agent.db')
        const driver = driverOf(path)
        expect(driver.capabilities.encrypted).toBe(true)
        const db = await openDatabase({ driver })
        const fs = createFileSystem(db)
        await fs.mkdir('/notes')
        for (let i = 0; i < 40; i++)
          await fs.writeFile(`/notes/${i}.md`, `${MARKER} ${i}\n${'lorem ipsum '.repeat(300)}`)
        await createKvStore(db).set('secret', MARKER)
        await createToolCalls(db).record({
          name: 'search',
          parameters: { q: MARKER },
          result: MARKER,
          startedAt: 1,
          completedAt: 2,
        })
        // A search builds the full-text index (FTS5 or postings): its words are content too.
        expect((await fs.search('lorem')).hits.length).toBeGreaterThan(0)
        const scan = () =>
          readdirSync(dir)
            .map((f) => join(dir, f))
            .filter((f) => existsSync(f) && readFileSync(f).includes(MARKER))
        expect(readdirSync(dir)).toContain('agent.db-wal')
        expect(scan()).toEqual([])
        await db.close()
        expect(scan()).toEqual([])
      } finally {
        await rm(dir, { recursive: true, force: true })
      }
    })
})
