import { type AgentDatabase, type FeedOptions, versionRetention } from '@agentfs/core'
import { CompiledPolicy } from '../policy/policy.js'
import { checkEmbedder } from '../search/semantic/embedder.js'
import { holdsOf } from '../storage/holds.js'
import type { FileSystemOptions, FsContext } from './context.js'
import { SqlFileSystem } from './sql-file-system.js'

/**
 * Creates the filesystem over an open AgentFS database.
 *
 * @example
 * const fs = createFileSystem(await openDatabase({ driver }))
 * await fs.writeFile('/notes/todo.md', '- ship it\n')
 */
export function createFileSystem(
  db: AgentDatabase,
  options: FileSystemOptions = {},
): SqlFileSystem {
  return new SqlFileSystem({
    q: db,
    chunkSize: db.chunkSize,
    chunks: db.chunks,
    clock: db.clock,
    holds: holdsOf(db),
    atime: options.atime ?? 'relatime',
    umask: options.umask ?? 0o022,
    uid: options.uid ?? 0,
    gid: options.gid ?? 0,
    ...(options.policy ? { policy: new CompiledPolicy(options.policy) } : {}),
    ...(options.permissions === 'enforce'
      ? {
          caller: {
            uid: options.uid ?? 0,
            gid: options.gid ?? 0,
            groups: [...(options.groups ?? [])],
          },
        }
      : {}),
    ...(options.feed?.enabled === false ? {} : { feed: feedOf(options.feed) }),
    ...(options.embed === undefined ? {} : { embedder: checkEmbedder(options.embed) }),
  })
}

function feedOf(options: FeedOptions = {}): NonNullable<FsContext['feed']> {
  const versions = options.versions
  return {
    ...(options.sessionId === undefined ? {} : { sessionId: options.sessionId }),
    ...(versions === undefined || versions === false
      ? {}
      : { versions: versionRetention(versions === true ? {} : versions) }),
  }
}
