import * as nodeFs from 'node:fs/promises'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type AgentDatabase, fixedClock, openDatabase } from '@agentfs/core'
import { betterSqlite3Driver } from '@agentfs/driver-better-sqlite3'
import { createFileSystem } from '@agentfs/fs'
import { type DifferentialFs, type InitialTree, snapshotTree, writeTree } from '@agentfs/test-kit'
import { afterEach } from 'vitest'
import { createOverlay, HostFileSystem, type OverlayFs } from '../src/index.js'

export const TREE: InitialTree = {
  '/src': { dir: true },
  '/src/lib': { dir: true },
  '/src/index.ts': "import { a } from './lib/a.js'\nconsole.log(a)\n",
  '/src/lib/a.ts': 'export const a = 1\n',
  '/README.md': '# Project\n\nLine two.\n',
  '/docs': { dir: true },
  '/docs/guide.md': 'guide\n',
  '/latest': { symlink: 'docs/guide.md' },
}

const cleanups: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn()
})

/** A host directory holding `tree`, and an overlay over it with an in-memory delta. */
export async function hostOverlay(tree: InitialTree = TREE): Promise<{
  overlay: OverlayFs
  dir: string
  db: AgentDatabase
  snapshot(): Promise<string[]>
}> {
  const dir = await mkdtemp(join(tmpdir(), 'agentfs-overlay-base-'))
  await writeTree(dir, tree)
  const db = await openDatabase({
    driver: betterSqlite3Driver({ path: ':memory:' }),
    clock: fixedClock(),
  })
  const overlay = await createOverlay({
    base: new HostFileSystem({ root: dir }),
    delta: createFileSystem(db, { umask: process.umask() }),
  })
  cleanups.push(async () => {
    await db.close()
    await rm(dir, { recursive: true, force: true })
  })
  return {
    overlay,
    dir,
    db,
    snapshot: () => snapshotTree(nodeFs as unknown as DifferentialFs, dir),
  }
}
