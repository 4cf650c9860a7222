import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type Driver, openDatabase } from '@agentfs/core'
import { betterSqlite3Driver } from '@agentfs/driver-better-sqlite3'
import { libsqlDriver } from '@agentfs/driver-libsql'
import { nodeSqliteDriver, nodeSqliteProblem } from '@agentfs/driver-node-sqlite'
import { createFileSystem } from '@agentfs/fs'
import { createOverlay, HostFileSystem } from '@agentfs/overlay'
import { runFileSystemSuite, type SuiteFs, type SuiteInstance } from '@agentfs/test-kit'

// One contract, every FileSystem: the database filesystem on each driver, the overlay over a
// host directory and over a database, and a writable host directory (confined to its root).

async function database(driver: (dir: string) => Driver): Promise<SuiteInstance> {
  const dir = await mkdtemp(join(tmpdir(), 'agentfs-contract-'))
  const db = await openDatabase({ driver: driver(dir) })
  return {
    fs: createFileSystem(db) as unknown as SuiteFs,
    dispose: async () => {
      await db.close()
      await rm(dir, { recursive: true, force: true })
    },
  }
}

runFileSystemSuite('SqlFileSystem on better-sqlite3', () =>
  database((dir) => betterSqlite3Driver({ path: join(dir, 'a.db') })),
)
runFileSystemSuite('SqlFileSystem on libSQL', () =>
  database((dir) => libsqlDriver({ url: `file:${join(dir, 'a.db')}` })),
)
if (nodeSqliteProblem() === undefined)
  runFileSystemSuite('SqlFileSystem on node:sqlite', () =>
    database((dir) => nodeSqliteDriver({ path: join(dir, 'a.db') })),
  )
else console.log(`FileSystem contract on node:sqlite skipped: ${nodeSqliteProblem()}`)

runFileSystemSuite('OverlayFs over a host directory', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'agentfs-contract-'))
  const db = await openDatabase({ driver: betterSqlite3Driver({ path: join(dir, 'delta.db') }) })
  const overlay = await createOverlay({
    base: new HostFileSystem({ root: dir }),
    delta: createFileSystem(db),
  })
  return {
    fs: overlay as unknown as SuiteFs,
    dispose: async () => {
      await db.close()
      await rm(dir, { recursive: true, force: true })
    },
  }
})

runFileSystemSuite('OverlayFs over a database', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'agentfs-contract-'))
  const base = await openDatabase({ driver: betterSqlite3Driver({ path: join(dir, 'base.db') }) })
  const delta = await openDatabase({ driver: betterSqlite3Driver({ path: join(dir, 'delta.db') }) })
  const overlay = await createOverlay({
    base: createFileSystem(base),
    delta: createFileSystem(delta),
    describeBase: { kind: 'agentfs', path: join(dir, 'base.db') },
  })
  return {
    fs: overlay as unknown as SuiteFs,
    dispose: async () => {
      await delta.close()
      await base.close()
      await rm(dir, { recursive: true, force: true })
    },
  }
})

runFileSystemSuite(
  'HostFileSystem, writable',
  async () => {
    const dir = await mkdtemp(join(tmpdir(), 'agentfs-contract-'))
    return {
      fs: new HostFileSystem({ root: dir, writable: true }) as unknown as SuiteFs,
      dispose: () => rm(dir, { recursive: true, force: true }),
    }
  },
  {
    skip: {
      'links/absolute-target':
        "an absolute link target is a host path: one outside the root is refused with EACCES (confinement), never followed into the root's namespace",
    },
  },
)
