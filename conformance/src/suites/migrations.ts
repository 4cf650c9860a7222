import {
  type AgentDatabase,
  guardDriver,
  isAgentFsError,
  normalizeDdl,
  SCHEMA_VERSION,
  SPEC_INDEXES,
  SPEC_TABLES,
} from '@agentfs/core'
import { expect } from 'vitest'
import { canonicalDump } from '../dump.js'
import {
  FIXTURE_CONTENT,
  FIXTURE_LAYOUTS,
  fixtureScript,
  unmigratableScript,
} from '../fixtures/layouts.js'
import { REFERENCE_CONTENT, referenceSdkScript } from '../reference-fixture.js'
import { countRows, inoBySql, readFileBySql } from '../sql-read.js'
import type { SuiteContext } from './context.js'

async function expectSpecLayout(db: AgentDatabase, options: { referenceToolCalls?: boolean } = {}) {
  const { rows } = await db.execute<{ name: string; sql: string }>({
    sql: "SELECT name, sql FROM sqlite_schema WHERE sql IS NOT NULL AND name NOT GLOB 'sqlite_*'",
  })
  const byName = new Map(rows.map((r) => [r.name, r.sql]))
  for (const spec of [...SPEC_TABLES, ...SPEC_INDEXES]) {
    if (spec.name === 'tool_calls' && options.referenceToolCalls) continue
    expect(byName.has(spec.name), `${spec.name} exists`).toBe(true)
    expect(normalizeDdl(byName.get(spec.name)!), spec.name).toBe(normalizeDdl(spec.sql))
  }
  const version = await db.execute<{ user_version: number }>({ sql: 'PRAGMA user_version' })
  expect(version.rows[0]!.user_version).toBe(SCHEMA_VERSION)
  const config = await db.execute<{ key: string; value: string }>({
    sql: 'SELECT key, value FROM fs_config ORDER BY key',
  })
  expect(config.rows.find((r) => r.key === 'schema_version')?.value).toBe('0.4')
  const integrity = await db.execute<{ integrity_check: string }>({ sql: 'PRAGMA integrity_check' })
  expect(integrity.rows).toEqual([{ integrity_check: 'ok' }])
}

async function expectChunkRule(db: AgentDatabase) {
  const bad = await db.execute({
    sql: `SELECT i.ino FROM fs_inode i
      WHERE (i.mode & 61440) = 32768 AND i.size != COALESCE((SELECT SUM(length(d.data)) FROM fs_data d WHERE d.ino = i.ino), 0)
         OR EXISTS (SELECT 1 FROM fs_data d WHERE d.ino = i.ino AND length(d.data) != ?
                    AND d.chunk_index != (SELECT MAX(chunk_index) FROM fs_data e WHERE e.ino = i.ino))`,
    params: [db.chunkSize],
  })
  expect(bad.rows, 'regular files: size = sum of chunks, all chunks but the last full').toEqual([])
}

/** Opening databases of every older layout upgrades them in one transaction without losing rows. */
export function migrationsSuite({ resources, it }: SuiteContext): void {
  it(
    'migrations/fresh',
    'a fresh database has exactly the spec v0.4 schema and a root directory',
    async () => {
      const db = await resources().open()
      await expectSpecLayout(db)
      const { rows } = await db.execute<{ ino: number; mode: number; nlink: number }>({
        sql: 'SELECT ino, mode, nlink FROM fs_inode',
      })
      expect(rows).toEqual([{ ino: 1, mode: 0o40755, nlink: 1 }])
      expect(db.chunkSize).toBe(4096)
      const again = await resources().open({ driver: db.driver.driver })
      expect(again.migration.steps).toEqual([])
    },
  )

  it(
    'migrations/chunk-size',
    'chunk_size is chosen at creation and immutable afterwards',
    async () => {
      const dir = await resources().tempDir()
      const db = await resources().open({
        chunkSize: 65536,
        driver: await resources().driver({ tempDir: dir, slot: 0 }),
      })
      expect(db.chunkSize).toBe(65536)
      const error = await resources()
        .open({ chunkSize: 4096, driver: db.driver.driver })
        .catch((e: unknown) => e)
      expect(isAgentFsError(error, 'INVALID_ARGUMENT')).toBe(true)
      const reopened = await resources().open({ driver: db.driver.driver })
      expect(reopened.chunkSize).toBe(65536)
      const bad = await resources()
        .open({ chunkSize: 3 })
        .catch((e: unknown) => e)
      expect(isAgentFsError(bad, 'INVALID_ARGUMENT')).toBe(true)
    },
  )

  for (const layout of FIXTURE_LAYOUTS) {
    for (const foreignKeys of [false, true]) {
      it(
        `migrations/${layout}${foreignKeys ? '/foreign-keys-on' : ''}`,
        `a ${layout} database migrates with every row and byte preserved${foreignKeys ? ', with foreign keys enforced on the connection (as a remote server does)' : ''}`,
        () => expectLayoutMigrates(layout, foreignKeys),
      )
    }
  }

  async function expectLayoutMigrates(
    layout: (typeof FIXTURE_LAYOUTS)[number],
    foreignKeys: boolean,
  ) {
    // Older layouts cascade deletes through foreign keys: the migration must keep every row
    // whatever the connection's setting (it cannot switch it inside its transaction).
    const setupScript = `${fixtureScript(layout)}${foreignKeys ? '\nPRAGMA foreign_keys = ON;' : ''}`
    const db = await resources().open({ setupScript })
    if (foreignKeys && db.driver.driver.capabilities.connectionPragmas !== false) {
      const { rows } = await db.execute<{ foreign_keys: number }>({ sql: 'PRAGMA foreign_keys' })
      expect(Number(rows[0]!.foreign_keys), 'foreign keys on').toBe(1)
    }
    if (layout !== 'v0.4') expect(db.migration.steps.length).toBeGreaterThan(0)
    expect(db.migration.from).toBe(layout)
    await expectSpecLayout(db)
    await expectChunkRule(db)
    for (const [path, bytes] of Object.entries(FIXTURE_CONTENT.files)) {
      const read = await readFileBySql(db, path)
      expect(read && Buffer.from(read).equals(Buffer.from(bytes)), `${path} bytes`).toBe(true)
    }
    for (const [table, count] of Object.entries(FIXTURE_CONTENT.rowCounts)) {
      expect(await countRows(db, table), table).toBe(count)
    }
    const nlink = await db.execute<{ ino: number; nlink: number }>({
      sql: 'SELECT ino, nlink FROM fs_inode ORDER BY ino',
    })
    expect(Object.fromEntries(nlink.rows.map((r) => [r.ino, r.nlink]))).toEqual(
      FIXTURE_CONTENT.nlink,
    )
    const seq = await db.execute<{ seq: number }>({
      sql: "SELECT seq FROM sqlite_sequence WHERE name = 'fs_inode'",
    })
    expect(seq.rows[0]!.seq).toBeGreaterThanOrEqual(FIXTURE_CONTENT.inodeSequence)
    const target = await db.execute<{ target: string }>({
      sql: 'SELECT target FROM fs_symlink WHERE ino = ?',
      params: [(await inoBySql(db, '/latest'))!],
    })
    expect(target.rows[0]!.target).toBe(FIXTURE_CONTENT.symlinks['/latest'])
    if (layout === 'v0.2' || layout === 'v0.3' || layout === 'v0.4')
      expect(await countRows(db, 'fs_whiteout')).toBe(1)
    const again = await resources().open({ driver: db.driver.driver })
    expect(again.migration.steps).toEqual([])
  }

  it(
    'migrations/reference-sdk',
    'a database written by agentfs-sdk 0.6.4 opens with files, keys and calls intact',
    async () => {
      const db = await resources().open({ setupScript: referenceSdkScript() })
      expect(db.referenceToolCalls).toBe(true)
      await expectSpecLayout(db, { referenceToolCalls: true })
      await expectChunkRule(db)
      for (const [path, bytes] of Object.entries(REFERENCE_CONTENT.files)) {
        const read = await readFileBySql(db, path)
        expect(read && Buffer.from(read).equals(Buffer.from(bytes)), path).toBe(true)
      }
      const big = await readFileBySql(db, REFERENCE_CONTENT.bigFile.path)
      expect(big?.byteLength).toBe(REFERENCE_CONTENT.bigFile.length)
      for (const [table, count] of Object.entries(REFERENCE_CONTENT.rowCounts)) {
        expect(await countRows(db, table), table).toBe(count)
      }
      // The reference SDK keeps using its own columns; they must survive.
      const pending = await db.execute({
        sql: "SELECT id FROM tool_calls WHERE status = 'pending'",
      })
      expect(pending.rows.length).toBe(REFERENCE_CONTENT.pendingToolCalls)
    },
  )

  it('migrations/atomic', 'a migration that cannot complete changes nothing', async () => {
    const driver = guardDriver(await resources().driver())
    await driver.executeScript(unmigratableScript())
    const before = await canonicalDump(driver)
    const error = await resources()
      .open({ driver })
      .catch((e: unknown) => e)
    expect(isAgentFsError(error, 'MIGRATION_FAILED')).toBe(true)
    expect((error as Error).message).toMatch(/unchanged/)
    expect(await canonicalDump(driver)).toBe(before)
  })
}
