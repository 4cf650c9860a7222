import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type AgentDatabase, openDatabase } from '@agentfs/core'
import { betterSqlite3Driver } from '@agentfs/driver-better-sqlite3'
import { afterEach, expect, it } from 'vitest'
import { createFileSystem } from '../src/index.js'

const open: AgentDatabase[] = []
let dir: string | undefined
afterEach(async () => {
  for (const db of open.splice(0)) await db.close()
  if (dir) rmSync(dir, { recursive: true, force: true })
})

// A whole-file read of a file larger than one chunk takes two statements (the inode with the
// first chunk, then the others). Another connection rewrites the file between them: the read
// must return one version whole, never the first chunk of one and the rest of the other.
it('readFile never mixes two versions of a file rewritten between its statements', async () => {
  dir = mkdtempSync(join(tmpdir(), 'agentfs-read-'))
  const file = join(dir, 'mix.db')
  const driver = betterSqlite3Driver({ path: file })
  const other = await openDatabase({ driver: betterSqlite3Driver({ path: file }), chunkSize: 4096 })
  open.push(other)
  const writer = createFileSystem(other)
  const older = Buffer.alloc(3 * 4096, 'a')
  const newer = Buffer.alloc(3 * 4096, 'b')
  await writer.writeFile('/f', older)
  let rewrites = 0
  const execute = driver.execute.bind(driver)
  driver.execute = async (statement) => {
    if (
      rewrites === 0 &&
      /FROM fs_data WHERE ino = \(SELECT \?\) AND chunk_index > 0/.test(statement.sql)
    ) {
      rewrites++
      await writer.writeFile('/f', newer)
    }
    return execute(statement)
  }
  const db = await openDatabase({ driver, chunkSize: 4096 })
  open.push(db)
  const reader = createFileSystem(db)
  const got = await reader.readFile('/f')
  expect(rewrites).toBe(1)
  expect(got.equals(newer) || got.equals(older)).toBe(true)
})
