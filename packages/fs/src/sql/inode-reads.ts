import {
  badEntryName,
  fsError,
  hasLoneSurrogate,
  NAME_MAX,
  ROOT_INO,
  S_IFDIR,
  S_IFMT,
} from '@agentfs/core'
import type { Stats } from '../stats.js'
import { INODE_COLUMNS, type InodeRow, inodeColumnsOf } from '../storage/inode.js'
import type { FsContext } from './context.js'
import { statsOf } from './metadata-ops.js'

/**
 * Reads by inode number, for a server that names files by inode as the kernel does (the FUSE
 * mount): no path is parsed or walked, and a file renamed by another process since is still
 * found. Only a filesystem that decides nothing by path offers them (see `FileSystem.inodes`).
 */
export interface InodeReads {
  /** The root directory's inode number. */
  readonly root: number
  /** Inode `ino`'s stats, as `lstat` gives them; ENOENT once it is freed. */
  stat(ino: number): Promise<Stats>
  /**
   * The stats of what `name` names in directory `dir` (not following a link), or undefined when
   * it names nothing. ENOENT when `dir` is freed, ENOTDIR when it is not a directory, EINVAL or
   * ENAMETOOLONG for a name no entry can have.
   */
  lookup(dir: number, name: string): Promise<Stats | undefined>
}

const STAT_SQL = `SELECT ${INODE_COLUMNS} FROM fs_inode WHERE ino = ?`

/** The directory's mode and the entry's inode (NULL columns when the name is not there). */
const LOOKUP_SQL =
  `SELECT p.mode AS dir_mode, ${inodeColumnsOf('i')} FROM fs_inode p ` +
  'LEFT JOIN fs_dentry d ON d.parent_ino = p.ino AND d.name = ? ' +
  'LEFT JOIN fs_inode i ON i.ino = d.ino WHERE p.ino = ?'

const encoder = new TextEncoder()

function checkIno(ino: number, syscall: string): void {
  if (!Number.isSafeInteger(ino) || ino < 1)
    throw fsError('EINVAL', syscall, String(ino), { hint: 'an inode number is a positive integer' })
}

/** The reads of `ctx`'s database, by inode number. */
export function inodeReads(ctx: FsContext): InodeReads {
  return {
    root: ROOT_INO,
    async stat(ino) {
      checkIno(ino, 'stat')
      const { rows } = await ctx.q.execute<InodeRow>({
        sql: STAT_SQL,
        params: [ino],
        first: true,
      })
      const row = rows[0]
      if (row === undefined) throw fsError('ENOENT', 'stat', `inode ${ino}`)
      return statsOf(ctx, row)
    },
    async lookup(dir, name) {
      checkIno(dir, 'lookup')
      const bad = badEntryName(name) ?? (hasLoneSurrogate(name) ? 'it is not valid Unicode' : '')
      if (bad !== '')
        throw fsError('EINVAL', 'lookup', `inode ${dir}`, {
          hint: `no entry can be named so: ${bad}`,
        })
      if (name.length > NAME_MAX / 3 && encoder.encode(name).byteLength > NAME_MAX)
        throw fsError('ENAMETOOLONG', 'lookup', `inode ${dir}`)
      const { rows } = await ctx.q.execute<InodeRow & { dir_mode: number }>({
        sql: LOOKUP_SQL,
        params: [name, dir],
        first: true,
      })
      const row = rows[0]
      if (row === undefined) throw fsError('ENOENT', 'lookup', `inode ${dir}`)
      if ((row.dir_mode & S_IFMT) !== S_IFDIR) throw fsError('ENOTDIR', 'lookup', `inode ${dir}`)
      if (row.ino === null) return undefined
      const { dir_mode: _, ...entry } = row
      return statsOf(ctx, entry)
    },
  }
}
