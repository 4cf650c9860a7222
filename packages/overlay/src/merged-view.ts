import {
  fsError,
  joinPath,
  type PathSteps,
  parentPath,
  parsePath,
  placeholders,
  type Queryable,
  resolvePath,
  undefinedIfAbsent,
} from '@agentfs/core'
import { Dirent, type FileSystem, type SqlFileSystem, type Stats } from '@agentfs/fs'

type Layer = 'delta' | 'base'

/** An entry of the merged view: which layer it comes from and its lstat. */
export interface Node {
  readonly layer: Layer
  readonly stats: Stats
}

/** Where a path leads in the merged view. `path` has no symlink in any directory part. */
export interface Resolved {
  readonly path: string
  readonly node: Node | undefined
}

/** A Stats with another inode number (origin tracking). */
function withIno(stats: Stats, ino: number): Stats {
  return Object.assign(Object.create(Object.getPrototypeOf(stats) as object) as Stats, stats, {
    ino,
  })
}

/**
 * The merged view of an overlay, read-only: which layer each path comes from (delta, or the
 * base where no whiteout hides it), POSIX resolution over that view, merged listings, and the
 * inode numbers copied-up entries keep from the base (`fs_origin`).
 */
export class MergedView {
  constructor(
    readonly base: FileSystem,
    readonly delta: SqlFileSystem,
    readonly q: Queryable,
  ) {}

  /** True when `path` or one of its ancestors has a whiteout. */
  async whitedOut(path: string): Promise<boolean> {
    const candidates: string[] = []
    for (let p = path; p !== '/'; p = parentPath(p)) candidates.push(p)
    if (candidates.length === 0) return false
    const { rows } = await this.q.execute({
      sql: `SELECT 1 FROM fs_whiteout WHERE path IN (${placeholders(candidates.length)}) LIMIT 1`,
      params: candidates,
    })
    return rows.length > 0
  }

  /** True when the base's children of directory `dir` show through (no whiteout, a base dir all the way). */
  async baseVisible(dir: string): Promise<boolean> {
    if (dir === '/') return true
    if (await this.whitedOut(dir)) return false
    let prefix = ''
    for (const part of dir.slice(1).split('/')) {
      prefix += `/${part}`
      const stats = await this.base.lstat(prefix).catch(undefinedIfAbsent)
      if (!stats?.isDirectory()) return false
    }
    return true
  }

  /** The base entry at `path`, if the merged view lets it show through. */
  async baseEntry(path: string): Promise<Stats | undefined> {
    if (path === '/') return this.base.lstat('/')
    if (!(await this.baseVisible(parentPath(path)))) return undefined
    if (await this.whitedOut(path)) return undefined
    return this.base.lstat(path).catch(undefinedIfAbsent)
  }

  /** The base entry at `path` regardless of whiteouts on the path itself (what a whiteout hides). */
  async baseBehind(path: string): Promise<Stats | undefined> {
    if (!(await this.baseVisible(parentPath(path)))) return undefined
    return this.base.lstat(path).catch(undefinedIfAbsent)
  }

  async node(path: string): Promise<Node | undefined> {
    const own = await this.delta.lstat(path).catch(undefinedIfAbsent)
    if (own) return { layer: 'delta', stats: own }
    const base = await this.baseEntry(path)
    return base ? { layer: 'base', stats: base } : undefined
  }

  layer(node: Node): FileSystem {
    return node.layer === 'delta' ? this.delta : this.base
  }

  /** The merged view's steps for the shared resolver: a directory is its path (never through a link). */
  readonly #steps: PathSteps<string, Node> = {
    root: () => '/',
    step: async (dir, names) => {
      const entry = await this.node(joinPath(dir, names[0]!))
      return { found: entry ? 1 : 0, entry, dir }
    },
    isDirectory: (entry) => entry.stats.isDirectory(),
    isSymbolicLink: (entry) => entry.stats.isSymbolicLink(),
    readlink: (dir, name, entry) => this.layer(entry).readlink(joinPath(dir, name)),
    enter: (dir, name) => joinPath(dir, name),
    parent: (dir) => parentPath(dir),
  }

  /** POSIX resolution over the merged view ({@link resolvePath}): links in every component, `..` physically. */
  async resolve(
    path: string,
    followLast: boolean,
    syscall: string,
    allowMissing = false,
  ): Promise<Resolved> {
    const r = await resolvePath(this.#steps, parsePath(path, syscall), {
      followLast,
      syscall,
      allowMissing,
    })
    if (r.name === undefined) return { path: r.dir, node: await this.node(r.dir) }
    return { path: joinPath(r.dir, r.name), node: r.entry }
  }

  async existing(
    path: string,
    syscall: string,
    follow = true,
  ): Promise<{ path: string; node: Node }> {
    const r = await this.resolve(path, follow, syscall)
    if (!r.node) throw fsError('ENOENT', syscall, path)
    return r as { path: string; node: Node }
  }

  async stats(node: Node): Promise<Stats> {
    if (node.layer === 'base') return node.stats
    const { rows } = await this.q.execute<{ base_ino: number }>({
      sql: 'SELECT base_ino FROM fs_origin WHERE delta_ino = ?',
      params: [node.stats.ino],
    })
    return rows[0] ? withIno(node.stats, rows[0].base_ino) : node.stats
  }

  /** Merged directory listing: delta entries, then base entries not shadowed or whited out. */
  async list(dir: string): Promise<Dirent[]> {
    const byName = new Map<string, Dirent>()
    const own = await this.delta.lstat(dir).catch(undefinedIfAbsent)
    if (own?.isDirectory()) {
      for (const entry of (await this.delta.readdir(dir, { withFileTypes: true })) as Dirent[])
        byName.set(entry.name, entry)
    }
    if (await this.baseVisible(dir)) {
      const baseDir = await this.base.lstat(dir).catch(undefinedIfAbsent)
      if (baseDir?.isDirectory()) {
        const { rows } = await this.q.execute<{ path: string }>({
          sql: 'SELECT path FROM fs_whiteout WHERE parent_path = ?',
          params: [dir],
        })
        const hidden = new Set(rows.map((r) => r.path))
        for (const entry of (await this.base.readdir(dir, { withFileTypes: true })) as Dirent[]) {
          if (!byName.has(entry.name) && !hidden.has(joinPath(dir, entry.name)))
            byName.set(entry.name, entry)
        }
      }
    }
    return [...byName.values()]
      .map(
        (d) =>
          new Dirent(
            d.name,
            dir,
            d.isDirectory()
              ? 0o040000
              : d.isSymbolicLink()
                ? 0o120000
                : d.isFile()
                  ? 0o100000
                  : 0o010000,
          ),
      )
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  }
}
