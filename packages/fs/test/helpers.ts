import {
  type AgentDatabase,
  AgentFsError,
  type Driver,
  fixedClock,
  groupCommits,
  openDatabase,
} from '@agentfs/core'
import { betterSqlite3Driver } from '@agentfs/driver-better-sqlite3'
import { libsqlDriver } from '@agentfs/driver-libsql'
import { tursoDriver } from '@agentfs/driver-turso'
import { serverBacked } from '@agentfs/hrana-server'
import { withoutRecursiveQueries, withSlotIds } from '@agentfs/test-kit'
import { afterEach, expect } from 'vitest'
import { createFileSystem, type FileSystemOptions, type SqlFileSystem } from '../src/index.js'

/** The driver name whose databases {@link freshFs} wraps with `groupCommits`. */
export const GROUPED = 'better-sqlite3, grouped commits'

/** Every first-party driver; tests run once per driver. */
export const DRIVERS: Record<string, () => Driver> = {
  'better-sqlite3': () => betterSqlite3Driver({ path: ':memory:' }),
  libsql: () => libsqlDriver({ url: ':memory:' }),
  'libsql remote': () => serverBacked((url) => libsqlDriver({ url, busyTimeoutMs: 2000 })),
  turso: () => tursoDriver({ path: ':memory:' }),
  // The SQL paths for engines without WITH RECURSIVE (Turso), on each engine here.
  'better-sqlite3, no WITH RECURSIVE': () =>
    withoutRecursiveQueries(betterSqlite3Driver({ path: ':memory:' })),
  'libsql, no WITH RECURSIVE': () => withoutRecursiveQueries(libsqlDriver({ url: ':memory:' })),
  // A synced database's paths: slot ids, and whole-file writes that replace the inode.
  'better-sqlite3, slot ids': () => withSlotIds(betterSqlite3Driver({ path: ':memory:' })),
  'turso, slot ids': () => withSlotIds(tursoDriver({ path: ':memory:' })),
  // Commits in groups (what a mount does): every call still atomic, in a savepoint of its own.
  [GROUPED]: () => betterSqlite3Driver({ path: ':memory:' }),
}

const open: AgentDatabase[] = []
afterEach(async () => {
  for (const db of open.splice(0)) await db.close()
})

/** A fresh filesystem on a new in-memory database. */
export async function freshFs(
  driver: string,
  options: FileSystemOptions & { chunkSize?: number } = {},
): Promise<{ fs: SqlFileSystem; db: AgentDatabase }> {
  const opened = await openDatabase({
    driver: DRIVERS[driver]!(),
    clock: fixedClock(),
    ...(options.chunkSize === undefined ? {} : { chunkSize: options.chunkSize }),
  })
  const db = driver === GROUPED ? groupCommits(opened) : opened
  open.push(db)
  return { fs: createFileSystem(db, options), db }
}

/** The POSIX code of a rejected promise (or 'ok'). */
export async function code(promise: Promise<unknown>): Promise<string> {
  try {
    await promise
    return 'ok'
  } catch (error) {
    return (error as { code?: string }).code ?? String(error)
  }
}

/** The code of a rejected promise, which must be a typed AgentFsError (undefined when it resolves). */
export async function typedCode(promise: Promise<unknown>): Promise<string | undefined> {
  try {
    await promise
    return undefined
  } catch (error) {
    expect(error).toBeInstanceOf(AgentFsError)
    return (error as AgentFsError).code
  }
}
