import { createFileSystem, type FileSystem } from '@agentfs/fs'
import { createOverlay } from '@agentfs/overlay'
import type { ScenarioContext } from '../../harness.js'

/** Makes the filesystem a scenario works on. */
export type FsFactory = (context: ScenarioContext) => Promise<FileSystem>

/** The AgentFS filesystem of the scenario's database. */
export const plainFs: FsFactory = async ({ db }) => createFileSystem(db)

/**
 * An overlay whose delta is the scenario's database, over a pre-populated AgentFS base in a
 * second database: the same scenarios then exercise copy-up, whiteouts and origins.
 */
export const overlayFs: FsFactory = async ({ db, openDatabase }) => {
  const base = createFileSystem(await openDatabase())
  await base.mkdir('/docs')
  await base.writeFile('/docs/base.md', 'from the base\n')
  await base.writeFile('/base.txt', 'base file\n')
  return createOverlay({
    base,
    delta: createFileSystem(db),
    describeBase: { kind: 'agentfs', path: 'base.db' },
  })
}
