import { constants } from 'node:fs'
import type { FileSystem, FsFileHandle, Stats } from '@agentfs/fs'
import { MAX_TREE_DEPTH } from '@agentfs/fs'
import { fail, NAME_MAX, S_IFDIR, S_IFMT, S_IFREG } from './fuse-dirs.js'

export const ROOT = 1
const MAX_NAMES = 8 // names a node remembers; further hard links are found again by lookup

/** One inode as the kernel knows it, however many names reach it. */
export interface Node {
  readonly nodeid: number
  readonly key: string
  /** The inode number stat shows (kept when a copy-on-write view copies the file up). */
  readonly ino: number
  /** Names it was found under, most recent first: [parent node id, name]. */
  names: [number, string][]
  /** The kernel's references (lookups not yet forgotten). */
  lookups: number
  /** Open listings holding it as an entry (readdirplus): it may be sent to the kernel yet. */
  listed: number
  mode: number
  gid: number
  /** Handles of the filesystem this node reads and writes through, opened on first use. */
  reader?: Promise<FsFileHandle> | undefined
  writer?: Promise<FsFileHandle> | undefined
}

const keyOf = (s: Stats) => `${s.dev}:${s.ino}`
const nameKey = (parent: number, name: string) => `${parent}/${name}`

/**
 * The nodes the kernel holds: node id ↔ inode, the names each was found under (re-verified by
 * inode number before use: other processes may rename or remove), and the filesystem handles a
 * node reads and writes through. A node goes when the kernel forgets it and no open listing
 * holds it.
 */
export class NodeTable {
  readonly root: Node = {
    nodeid: ROOT,
    key: '',
    ino: 0,
    names: [],
    lookups: 1,
    listed: 0,
    mode: S_IFDIR,
    gid: 0,
  }
  readonly #fs: FileSystem
  readonly #onDrop: (nodeid: number) => void
  readonly #nodes = new Map<number, Node>([[ROOT, this.root]])
  readonly #byKey = new Map<string, number>()
  /** Which node each remembered name leads to: `parent/name` → node id. */
  readonly #named = new Map<string, number>()
  #nextSpareId = 2 ** 40

  /** `onDrop` is told of each node dropped (what the caller keeps per node goes with it). */
  constructor(fs: FileSystem, onDrop: (nodeid: number) => void) {
    this.#fs = fs
    this.#onDrop = onDrop
  }

  get(nodeid: number): Node | undefined {
    return this.#nodes.get(nodeid)
  }

  /** The node, or ESTALE when the kernel asks about one it was told is gone. */
  of(nodeid: number): Node {
    return this.#nodes.get(nodeid) ?? fail('ESTALE', `node ${nodeid} is not known (forgotten)`)
  }

  /** The node the name `name` in directory `parent` was last seen to lead to. */
  named(parent: number, name: string): Node | undefined {
    return this.#nodes.get(this.#named.get(nameKey(parent, name)) ?? -1)
  }

  /** The node id of a known inode (the root's too), or undefined. */
  known(s: Stats): number | undefined {
    return this.#byKey.get(keyOf(s))
  }

  /** Whether a directory is known to the kernel under a name other than `parent`/`name`. */
  knownElsewhere(s: Stats, parent: number, name: string): boolean {
    const known = this.known(s)
    if (known === undefined) return false
    const first = this.#nodes.get(known)?.names[0]
    return known === ROOT || first === undefined || first[0] !== parent || first[1] !== name
  }

  /** The path of a name under a node, following the node's first name up to the root. */
  pathOf(nodeid: number, name?: string): string {
    const parts: string[] = name === undefined ? [] : [name]
    let id = nodeid
    for (let depth = 0; id !== ROOT; depth++) {
      if (depth > MAX_TREE_DEPTH) fail('ELOOP', 'the path is deeper than any tree allows')
      const first = this.of(id).names[0] ?? fail('ESTALE', `node ${id} has no name left`)
      parts.push(first[1])
      id = first[0]
    }
    return `/${parts.reverse().join('/')}`
  }

  /** Remembers that `s` is named `name` under `parent`; the node the kernel will use for it. */
  remember(s: Stats, parent: number, name: string, counted: boolean): Node {
    const key = keyOf(s)
    const nodeid = this.#byKey.get(key)
    if (nodeid === ROOT) return this.root
    let node = nodeid === undefined ? undefined : this.#nodes.get(nodeid)
    if (node === undefined) {
      let id = s.ino
      if (!Number.isSafeInteger(id) || id <= ROOT || this.#nodes.has(id)) id = this.#nextSpareId++
      node = {
        nodeid: id,
        key,
        ino: s.ino,
        names: [],
        lookups: 0,
        listed: 0,
        mode: s.mode,
        gid: s.gid,
      }
      this.#nodes.set(id, node)
      this.#byKey.set(key, id)
    }
    node.mode = s.mode
    node.gid = s.gid
    const previous = this.#named.get(nameKey(parent, name))
    if (previous !== undefined && previous !== node.nodeid) this.forgetName(parent, name)
    node.names = [[parent, name], ...node.names.filter(([p, n]) => p !== parent || n !== name)]
    this.#named.set(nameKey(parent, name), node.nodeid)
    if (node.names.length > MAX_NAMES) this.#dropNames(node, node.names.splice(MAX_NAMES))
    if (counted) node.lookups++
    return node
  }

  /** The name no longer leads where it did (unlinked, renamed over). */
  forgetName(parent: number, name: string): void {
    const key = nameKey(parent, name)
    const node = this.#nodes.get(this.#named.get(key) ?? -1)
    this.#named.delete(key)
    if (node) node.names = node.names.filter(([p, n]) => p !== parent || n !== name)
  }

  /** A rename through the mount: what `from` named is now `to` (and `to`'s old node lost it). */
  moved(fromParent: number, fromName: string, toParent: number, toName: string): void {
    this.forgetName(toParent, toName)
    const moved = this.named(fromParent, fromName)
    if (moved === undefined) return
    this.forgetName(fromParent, fromName)
    moved.names.unshift([toParent, toName])
    this.#named.set(nameKey(toParent, toName), moved.nodeid)
  }

  /** The node's current path and stats: its first name that still names the same inode. */
  async resolve(nodeid: number): Promise<{ path: string; stats: Stats }> {
    const node = this.of(nodeid)
    if (nodeid === ROOT) {
      const stats = await this.#fs.lstat('/')
      if (this.#byKey.get(keyOf(stats)) !== ROOT) this.#byKey.set(keyOf(stats), ROOT)
      return { path: '/', stats }
    }
    while (node.names.length > 0) {
      const path = this.pathOf(nodeid)
      const stats = await this.#fs.lstat(path).catch((error: { code?: string }) => {
        if (error.code === 'ENOENT' || error.code === 'ENOTDIR') return undefined
        throw error
      })
      if (stats !== undefined && stats.ino === node.ino) {
        node.mode = stats.mode
        node.gid = stats.gid
        return { path, stats }
      }
      this.#dropNames(node, node.names.splice(0, 1))
    }
    return fail('ENOENT', `node ${nodeid}: no name leads to it any more`)
  }

  /** The node's inode was just read (by number): its type and group as they are now. */
  refresh(nodeid: number, s: Stats): void {
    const node = this.of(nodeid)
    node.mode = s.mode
    node.gid = s.gid
  }

  /** The kernel dropped `nlookup` references. */
  forget(nodeid: number, nlookup: number): void {
    const node = this.#nodes.get(nodeid)
    if (node === undefined || nodeid === ROOT) return
    node.lookups -= nlookup
    this.dropIfUnused(node)
  }

  /** Drops a node neither the kernel nor an open listing holds, closing its handles. */
  dropIfUnused(node: Node): void {
    if (node.lookups > 0 || node.listed > 0 || node.nodeid === ROOT) return
    this.#onDrop(node.nodeid)
    this.#dropNames(node, node.names)
    this.#nodes.delete(node.nodeid)
    if (this.#byKey.get(node.key) === node.nodeid) this.#byKey.delete(node.key)
    this.#closeHandles(node)
  }

  /**
   * What the kernel may hold cached about `path`, which changed elsewhere: the nodes it names
   * (the path's own and its directory's) and the name in its directory.
   */
  cachedFor(path: string): { nodes: number[]; entry?: [number, string] } {
    const parts = path.split('/').filter((part) => part !== '')
    const last = parts.pop()
    if (last === undefined) return { nodes: [ROOT] }
    let dir = ROOT
    for (const part of parts) {
      const next = this.#named.get(nameKey(dir, part))
      // A directory the kernel was never given a name under: nothing below it is cached.
      if (next === undefined) return { nodes: [] }
      dir = next
    }
    const own = this.#named.get(nameKey(dir, last))
    const nodes = own === undefined ? [dir] : [dir, own]
    // A name the kernel cannot take (a damaged database's feed) is in none of its caches.
    return Buffer.byteLength(last) > NAME_MAX ? { nodes } : { nodes, entry: [dir, last] }
  }

  /** Runs `call` on the node's handle; once more on a new handle when the file went away. */
  async withHandle<T>(
    nodeid: number,
    write: boolean,
    call: (h: FsFileHandle) => Promise<T>,
  ): Promise<T> {
    try {
      return await call(await this.#handleFor(nodeid, write))
    } catch (error) {
      if ((error as { code?: string }).code !== 'EBADF') throw error
      const node = this.of(nodeid)
      // A file with no name left lives only through the handles the node has.
      if (node.names.length === 0) throw error
      this.#closeHandles(node)
      return call(await this.#handleFor(nodeid, write))
    }
  }

  /**
   * Keeps `handle` as the node's handle for writing (closing it when one is kept already), and
   * for reading too when it was opened for both.
   */
  adoptWriter(node: Node, handle: FsFileHandle, readable: boolean): void {
    if (node.writer !== undefined) {
      void handle.close().catch(() => {})
      return
    }
    node.writer = Promise.resolve(handle)
    if (readable && node.reader === undefined) node.reader = node.writer
  }

  /**
   * Before a name of a regular file the kernel holds goes (unlink, a rename over it): makes
   * sure the node has a handle of the filesystem, which keeps the file should that be its last
   * name — the kernel may have it open, and POSIX keeps an open file until its last close; the
   * filesystem frees it when the node's handles close, at the kernel's forget. `writable`: the
   * handle is opened for reading and writing (not on a copy-on-write view, where opening for
   * writing copies the file up).
   */
  async holdOpen(node: Node | undefined, writable: boolean): Promise<void> {
    if (node === undefined || node.lookups <= 0 || (node.mode & S_IFMT) !== S_IFREG) return
    if (node.reader !== undefined || node.writer !== undefined) return
    let both = false
    const held = this.resolve(node.nodeid).then(async ({ path }) => {
      const rw = writable
        ? await this.#fs.open(path, constants.O_RDWR).catch(() => undefined)
        : undefined
      both = rw !== undefined
      return rw ?? this.#fs.open(path, constants.O_RDONLY)
    })
    node.reader = held
    try {
      await held
    } catch {
      // Not held (gone already, or not allowed): the unlink goes on, and frees the file.
      if (node.reader === held) node.reader = undefined
      return
    }
    if (both && node.writer === undefined) node.writer = held
  }

  /**
   * {@link resolve}, or for a file with no name left that the node holds open (unlinked while
   * the kernel has it open) its stats through the handle, with path `''`.
   */
  async resolveOrHeld(nodeid: number): Promise<{ path: string; stats: Stats }> {
    try {
      return await this.resolve(nodeid)
    } catch (error) {
      if ((error as { code?: string }).code !== 'ENOENT') throw error
      const stats = await this.statByHandle(nodeid)
      if (stats === undefined) throw error
      return { path: '', stats }
    }
  }

  /** The node's own stats through its handle: a file unlinked while the kernel has it open. */
  async statByHandle(nodeid: number): Promise<Stats | undefined> {
    const node = this.of(nodeid)
    const handle = node.reader ?? node.writer
    return handle === undefined ? undefined : (await handle).stat()
  }

  /** Closes every node's handles (at unmount). */
  async closeAll(): Promise<void> {
    const open = [...this.#nodes.values()].flatMap((n) => [n.reader, n.writer])
    for (const node of this.#nodes.values()) node.reader = node.writer = undefined
    await Promise.allSettled(open.map(async (h) => (await h)?.close()))
  }

  /**
   * The node's handle for reading (or writing), opened on first use. A handle for writing is
   * opened for reading too where that is allowed, and then serves reads as well: a file
   * unlinked while open has only the handles its node has.
   */
  #handleFor(nodeid: number, write: boolean): Promise<FsFileHandle> {
    const node = this.of(nodeid)
    const kept = write ? node.writer : node.reader
    if (kept !== undefined) return kept
    const opened = this.resolve(nodeid).then(async ({ path, stats }) => {
      if ((stats.mode & S_IFMT) !== S_IFREG) fail('EISDIR', `${path} is not a regular file`)
      if (!write) return this.#fs.open(path, constants.O_RDONLY)
      const both = await this.#fs.open(path, constants.O_RDWR).catch(() => undefined)
      if (both !== undefined && node.writer === opened && node.reader !== opened) {
        // Reads go through it from now on: on a copy-on-write view the file it writes is the
        // copy, and a handle opened for reading before still reads the base.
        const previous = node.reader
        node.reader = opened
        void previous?.then((h) => h.close()).catch(() => {})
      }
      return both ?? this.#fs.open(path, constants.O_WRONLY)
    })
    if (write) node.writer = opened
    else node.reader = opened
    // A handle that could not open is not kept: the next call tries again.
    opened.catch(() => {
      if (node.writer === opened) node.writer = undefined
      if (node.reader === opened) node.reader = undefined
    })
    return opened
  }

  #closeHandles(node: Node): void {
    const open = [node.reader, node.writer]
    node.reader = node.writer = undefined
    for (const handle of open) handle?.then((h) => h.close()).catch(() => {})
  }

  /** Drops names from a node, and from the index when they still lead to it. */
  #dropNames(node: Node, dropped: [number, string][]): void {
    for (const [p, n] of dropped) {
      const key = nameKey(p, n)
      if (this.#named.get(key) === node.nodeid) this.#named.delete(key)
    }
  }
}
