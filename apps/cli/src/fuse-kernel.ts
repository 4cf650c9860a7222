import { constants } from 'node:fs'
import type { FileSystem, InodeReads, Stats } from '@agentfs/fs'
import type { Attributes, Entry, Operations, PlusListing, Request } from '@agentfs/fuse'
import { SET_ATTR } from '@agentfs/fuse'
import {
  direntMode,
  fail,
  NAME_MAX,
  RENAME_EXCHANGE,
  RENAME_NOREPLACE,
  S_IFDIR,
  S_IFMT,
  S_IFREG,
  S_ISGID,
  SubdirCounts,
  statfsOf,
} from './fuse-dirs.js'
import { NodeTable, ROOT } from './fuse-nodes.js'
import { ownership } from './fuse-owners.js'
import { applySetattr } from './fuse-setattr.js'

/**
 * A {@link FileSystem} as libfuse's low-level operations: the kernel names files by node id, and
 * one node stands for one inode however many names reach it (hard links are one file to the
 * kernel, with one nlink and one ctime). Where the filesystem reads by inode number
 * (`fs.inodes`: a database filesystem without a policy), `getattr` reads the node's inode and
 * `lookup` the name in the directory's inode, without a path. A node also remembers the names it
 * was found under; a change on a node runs on the first name that still leads to the same inode
 * (another process may have renamed or removed it), so every mutation stays one call, and one
 * transaction, on the filesystem. New inodes belong to the caller (and to a setgid directory's
 * group); directories report 2 + their subdirectories as nlink, as Linux does. The kernel checks
 * permissions (`default_permissions`), against these owners and modes.
 *
 * Files are read and written by node, not per open: there is no `open`, `create`, `flush` or
 * `release` handler, so the kernel opens and closes files without asking (libfuse's "no open"
 * mode: it keeps file data cached across opens, checks permissions itself, and sends O_TRUNC as
 * a truncate). A node opens a handle of the filesystem when it is first read (and another when
 * first written: a copy-on-write view copies a file up only then), and closes them when the
 * kernel forgets the node. Listings carry their entries' attributes (readdirplus), so a walk
 * needs no lookup per name.
 */

/** An open directory: its names and types, and (readdirplus) each entry's node. */
interface OpenDir {
  names: string[]
  modes: Float64Array
  /** Each entry's stats, when the filesystem listed them with the names. */
  stats?: (Stats | undefined)[]
  entries?: (Entry | undefined)[]
  sent?: (start: number, end: number) => void
}

export interface KernelOptions {
  /** The owner new inodes get when the caller is the same (the filesystem's own default). */
  readonly uid: number
  readonly gid: number
  /** Report every inode as owned by this user / group (`agentfs mount --uid/--gid`). */
  readonly reportUid?: number
  readonly reportGid?: number
  /** Damage found while serving (a name the kernel cannot take), each time it is met. */
  readonly report?: (error: Error) => void
  /**
   * Commits the changes made so far and says whether they were stored (fsync, fsyncdir): the
   * view's database commits in groups (see `groupCommits`). Absent: every change is committed
   * when it is made.
   */
  readonly flush?: () => Promise<void>
  /**
   * The filesystem copies a file up when it is first opened for writing (an overlay view): a
   * file the kernel holds is then kept for reading only when it is unlinked.
   */
  readonly copyOnWrite?: boolean
}

export interface KernelOperations extends Operations {
  /** Closes the open files and directories (at unmount). */
  closeAll(): Promise<void>
  /**
   * What the kernel may hold cached about `path`, which changed elsewhere: the nodes it names
   * (the path's own and its directory's, for attributes and data) and the name in its directory.
   */
  cachedFor(path: string): { nodes: number[]; entry?: [number, string] }
}

export function kernelOperations(fs: FileSystem, options: KernelOptions): KernelOperations {
  const subdirs = new SubdirCounts(fs)
  const table = new NodeTable(fs, (nodeid) => subdirs.delete(nodeid))
  const dirs = new Map<number, OpenDir>()
  let nextHandle = 1
  let rootKnown = false
  const isDirectory = (s: { mode: number }) => (s.mode & S_IFMT) === S_IFDIR
  const childPath = (dir: string, name: string) => (dir === '/' ? `/${name}` : `${dir}/${name}`)
  const resolve = (nodeid: number) => table.resolve(nodeid)
  /** Reads by inode number, where the filesystem offers them (not on a copy-on-write view). */
  const inodes = fs.inodes
  /** The filesystem's inode number of a node (the root's is the filesystem's). */
  const inodeOf = (nodeid: number, reads: InodeReads) =>
    nodeid === ROOT ? reads.root : table.of(nodeid).ino
  const holdWritable = options.copyOnWrite !== true
  /** fsync's promise: the changes so far are stored; a lost commit answers EIO (and once only). */
  const flush = async () => {
    try {
      await options.flush?.()
    } catch (error) {
      options.report?.(error as Error)
      fail('EIO', `changes made through the mount were lost: ${(error as Error).message}`)
    }
  }
  const pathOf = (nodeid: number, name?: string) => table.pathOf(nodeid, name)

  const dirOf = (fh: number) => dirs.get(fh) ?? fail('EBADF', `directory handle ${fh} is not open`)
  const changed = (parent: number, delta = 0) => subdirs.changed(parent, delta)

  /**
   * Attributes as the kernel shows them: directory nlink counted, owners as asked. `path` (or
   * how to find it) is needed only to count a directory's subdirectories.
   */
  const attributes = async (
    nodeid: number,
    path: string | (() => Promise<string>),
    s: Stats,
  ): Promise<Attributes> => {
    const nlink = isDirectory(s) ? await subdirs.nlink(nodeid, path, s) : s.nlink
    return {
      ino: s.ino,
      mode: s.mode,
      nlink,
      uid: options.reportUid ?? s.uid,
      gid: options.reportGid ?? s.gid,
      rdev: s.rdev,
      size: s.size,
      blocks: s.blocks,
      blksize: s.blksize,
      atimeNs: s.atimeNs,
      mtimeNs: s.mtimeNs,
      ctimeNs: s.ctimeNs,
    }
  }

  /** The entry of a name just found or made: its node counted as a kernel reference. */
  const entryOf = async (parent: number, name: string, path: string): Promise<Entry> => {
    const stats = await fs.lstat(path)
    const node = table.remember(stats, parent, name, true)
    return { nodeid: node.nodeid, attr: await attributes(node.nodeid, path, stats) }
  }

  const { owner, foreignOwner, makeOwned } = ownership(fs, options, (nodeid) => table.of(nodeid))
  const newPath = async (r: Request) => {
    const parent = await resolve(r.ino)
    if (!isDirectory(parent.stats)) fail('ENOTDIR', 'not a directory')
    return childPath(parent.path, r.name as string)
  }
  /**
   * A regular file (the kernel's mknod when it opens with O_CREAT): created by an exclusive open
   * whose handle the node keeps for writing (and reading, where a policy allows), so the first
   * write needs no open of its own, and a file unlinked while open stays readable.
   */
  const createFile = async (r: Request, path: string): Promise<Entry> => {
    const flags = constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY
    const both = constants.O_CREAT | constants.O_EXCL | constants.O_RDWR
    const set = foreignOwner(r)
    if (set !== undefined) {
      // Another user's file: created and given its owner in one transaction; the first write
      // opens its own handle (a handle opened inside the transaction would end with it).
      await makeOwned(path, set, async (f) => (await f.open(path, flags, r.mode & 0o7777)).close())
      changed(r.ino)
      return entryOf(r.ino, r.name as string, path)
    }
    let readable = true
    const handle = await fs.open(path, both, r.mode & 0o7777).catch((error: { code?: string }) => {
      // A policy that lets this file be written but not read: a handle for writing only.
      if (error.code !== 'EACCES' && error.code !== 'EPERM') throw error
      readable = false
      return fs.open(path, flags, r.mode & 0o7777)
    })
    try {
      changed(r.ino)
      const stats = await handle.stat()
      const node = table.remember(stats, r.ino, r.name as string, true)
      table.adoptWriter(node, handle, readable)
      return { nodeid: node.nodeid, attr: await attributes(node.nodeid, path, stats) }
    } catch (error) {
      await handle.close()
      throw error
    }
  }

  /** Each entry of a listing of directory `parent` (at `path`) with its node and attributes. */
  const plusEntries = async (
    parent: number,
    path: string,
    dir: OpenDir,
  ): Promise<(Entry | undefined)[]> => {
    const entries: (Entry | undefined)[] = []
    for (const [i, name] of dir.names.entries()) {
      if (name === '.' || name === '..') {
        entries.push(undefined)
        continue
      }
      const child = childPath(path, name)
      // The listing's own stats when the filesystem gave them (one statement for all).
      const stats = dir.stats?.[i] ?? (await fs.lstat(child).catch(() => undefined))
      // Gone since listed, or a directory the kernel knows under another name (a cycle in a
      // damaged database): the name only, and lookup decides.
      if (
        stats === undefined ||
        (isDirectory(stats) && table.knownElsewhere(stats, parent, name))
      ) {
        entries.push(undefined)
        continue
      }
      const node = table.remember(stats, parent, name, false)
      node.listed++
      entries.push({ nodeid: node.nodeid, attr: await attributes(node.nodeid, child, stats) })
    }
    return entries
  }

  return {
    lookup: async (r) => {
      if (!rootKnown) {
        await resolve(ROOT)
        rootKnown = true
      }
      const name = r.name as string
      /** The name's path: for the filesystem without reads by inode, messages and counting. */
      const path = () => pathOf(r.ino, name)
      let stats: Stats
      if (inodes !== undefined) {
        // In the directory the kernel means, wherever it is now: no path walked.
        stats =
          (await inodes.lookup(inodeOf(r.ino, inodes), name)) ??
          fail('ENOENT', `no entry ${name} in node ${r.ino}`)
      } else stats = await fs.lstat(path())
      const known = table.known(stats)
      // A directory reached through a second name (a cycle or a directory hard link in a
      // damaged database): refused, so cp -r, find and du cannot loop.
      if (isDirectory(stats) && known !== undefined) {
        if (known === ROOT) fail('ELOOP', `directory cycle at ${path()}; run agentfs fsck`)
        const first = table.get(known)?.names[0]
        if (first && (first[0] !== r.ino || first[1] !== name)) {
          const other = await resolve(known).catch(() => undefined)
          if (other && other.path !== path())
            fail('ELOOP', `directory cycle at ${path()}; run agentfs fsck`)
        }
      }
      const node = table.remember(stats, r.ino, name, true)
      return { nodeid: node.nodeid, attr: await attributes(node.nodeid, async () => path(), stats) }
    },
    forget: (ino, nlookup) => table.forget(ino, nlookup),
    getattr: async (r) => {
      if (inodes !== undefined) {
        // The inode's own attributes, whatever names it has now (none: a file unlinked while
        // open, which shows nlink 0).
        const stats = await inodes.stat(inodeOf(r.ino, inodes))
        table.refresh(r.ino, stats)
        return attributes(r.ino, async () => (await resolve(r.ino)).path, stats)
      }
      const { path, stats } = await table.resolveOrHeld(r.ino)
      const attr = await attributes(r.ino, path, stats)
      // No name leads to it (a view's base file keeps its own links below the view).
      return path === '' ? { ...attr, nlink: 0 } : attr
    },
    setattr: async (r) => {
      const set = r.toSet ?? 0
      let { path, stats } = await table.resolveOrHeld(r.ino)
      if (path === '') {
        // A file unlinked while open: its size changes through its handle (ftruncate).
        if (set !== SET_ATTR.SIZE) fail('ENOENT', `node ${r.ino} has no name left`)
        await table.withHandle(r.ino, true, (h) => h.truncate(r.size))
        return attributes(r.ino, path, (await table.statByHandle(r.ino)) ?? stats)
      }
      await applySetattr(fs, r, path, stats)
      ;({ path, stats } = await resolve(r.ino))
      return attributes(r.ino, path, stats)
    },
    readlink: async (r) => fs.readlink((await resolve(r.ino)).path),
    mknod: async (r) => {
      const path = await newPath(r)
      if ((r.mode & S_IFMT) === S_IFREG) return createFile(r, path)
      await makeOwned(path, foreignOwner(r), (f) => f.mknod(path, r.mode, r.rdev))
      changed(r.ino)
      return entryOf(r.ino, r.name as string, path)
    },
    mkdir: async (r) => {
      const path = await newPath(r)
      const mode = (r.mode & 0o7777) | (owner(r).inherit ? S_ISGID : 0)
      await makeOwned(path, foreignOwner(r), async (f) => {
        await f.mkdir(path, { mode })
      })
      changed(r.ino, 1)
      return entryOf(r.ino, r.name as string, path)
    },
    symlink: async (r) => {
      const path = await newPath(r)
      await makeOwned(path, foreignOwner(r), (f) => f.symlink(r.name2 as string, path))
      changed(r.ino)
      return entryOf(r.ino, r.name as string, path)
    },
    link: async (r) => {
      const { path: existing } = await resolve(r.ino)
      const target = pathOf(r.ino2, r.name2)
      await fs.link(existing, target)
      changed(r.ino2)
      return entryOf(r.ino2, r.name2 as string, target)
    },
    unlink: async (r) => {
      const path = pathOf(r.ino, r.name)
      await table.holdOpen(table.named(r.ino, r.name as string), holdWritable)
      await fs.unlink(path)
      changed(r.ino)
      table.forgetName(r.ino, r.name as string)
    },
    rmdir: async (r) => {
      await fs.rmdir(pathOf(r.ino, r.name))
      changed(r.ino, -1)
      table.forgetName(r.ino, r.name as string)
    },
    rename: async (r) => {
      if (r.flags & RENAME_EXCHANGE) fail('EINVAL', 'RENAME_EXCHANGE is not supported')
      const from = pathOf(r.ino, r.name)
      const to = pathOf(r.ino2, r.name2)
      if (r.flags & RENAME_NOREPLACE && (await fs.exists(to))) fail('EEXIST', `${to} exists`)
      await table.holdOpen(table.named(r.ino2, r.name2 as string), holdWritable)
      await fs.rename(from, to)
      // A directory moved (maybe over another): both parents are counted again.
      const moved = table.named(r.ino, r.name as string) ?? { mode: S_IFDIR }
      if (isDirectory(moved)) {
        subdirs.delete(r.ino)
        subdirs.delete(r.ino2)
      } else {
        changed(r.ino)
        changed(r.ino2)
      }
      table.moved(r.ino, r.name as string, r.ino2, r.name2 as string)
    },
    read: async (r) =>
      table.withHandle(r.ino, false, async (h) => {
        const buffer = Buffer.allocUnsafe(r.size)
        const { bytesRead } = await h.read(buffer, 0, r.size, r.offset)
        return buffer.subarray(0, bytesRead)
      }),
    write: async (r) =>
      table.withHandle(r.ino, true, async (h) => {
        const data = r.data as Buffer
        const { bytesWritten } = await h.write(data, 0, data.length, r.offset)
        return bytesWritten
      }),
    fsync: async (r) => {
      const writer = table.get(r.ino)?.writer
      if (writer) await (await writer).sync()
      await flush()
    },
    opendir: async (r) => {
      const { path } = await resolve(r.ino)
      let entries = await fs.readdir(path, { withFileTypes: true, withStats: true })
      // A damaged database can hold a name longer than any the kernel takes: it is left out of
      // the listing (the rest still lists) and reported.
      const tooLong = entries.filter((e) => Buffer.byteLength(e.name) > NAME_MAX)
      if (tooLong.length > 0) {
        entries = entries.filter((e) => Buffer.byteLength(e.name) <= NAME_MAX)
        options.report?.(
          new Error(
            `${path} holds ${tooLong.length} name(s) longer than ${NAME_MAX} bytes, left out of the listing; run agentfs fsck`,
          ),
        )
      }
      const modes = new Float64Array(entries.length + 2)
      modes[0] = S_IFDIR
      modes[1] = S_IFDIR
      entries.forEach((entry, i) => {
        modes[i + 2] = direntMode(entry)
      })
      const fh = nextHandle++
      dirs.set(fh, {
        names: ['.', '..', ...entries.map((e) => e.name)],
        modes,
        stats: [undefined, undefined, ...entries.map((e) => e.stats)],
      })
      return { fh }
    },
    readdir: async (r) => dirOf(r.fh),
    readdirplus: async (r): Promise<PlusListing> => {
      const dir = dirOf(r.fh)
      if (dir.entries === undefined) {
        const { path } = await resolve(r.ino)
        const entries = await plusEntries(r.ino, path, dir)
        dir.entries = entries
        dir.sent = (start, end) => {
          for (let i = start; i < end; i++) {
            const node = table.get(entries[i]?.nodeid ?? -1)
            if (node) node.lookups++
          }
        }
      }
      return dir as PlusListing
    },
    releasedir: async (r) => {
      const dir = dirs.get(r.fh)
      dirs.delete(r.fh)
      // Nodes the listing held that the kernel was never given (or has forgotten since).
      for (const entry of dir?.entries ?? []) {
        const node = entry && table.get(entry.nodeid)
        if (node === undefined) continue
        node.listed--
        table.dropIfUnused(node)
      }
    },
    fsyncdir: flush,
    statfs: () => statfsOf(fs),
    cachedFor: (path) => table.cachedFor(path),
    closeAll: async () => {
      dirs.clear()
      await table.closeAll()
    },
  }
}
