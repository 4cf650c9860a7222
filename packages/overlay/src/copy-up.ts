import {
  type Executor,
  fsError,
  joinPath,
  MERGE_LIMITS,
  mergeableText,
  parentPath,
  type Timestamp,
  undefinedIfAbsent,
} from '@agentfs/core'
import type { Dirent, FsFileHandle, Stats } from '@agentfs/fs'
import type { MergedView } from './merged-view.js'

const COPY_CHUNK = 1024 * 1024

const seconds = (ns: bigint) => Number(ns) / 1e9

/**
 * Copies one open file into another a chunk at a time (never the whole file), then closes both.
 * With `keep`, also returns the bytes copied when they are at most `keep` bytes (else nothing).
 */
export async function pump(
  input: FsFileHandle,
  output: FsFileHandle,
  keep = 0,
): Promise<Buffer | undefined> {
  const kept: Buffer[] = []
  let within = keep > 0
  try {
    const buffer = Buffer.allocUnsafe(COPY_CHUNK)
    for (let position = 0; ; ) {
      const { bytesRead } = await input.read(buffer, 0, COPY_CHUNK, position)
      if (bytesRead === 0) break
      await output.write(buffer, 0, bytesRead, position)
      position += bytesRead
      within &&= position <= keep
      if (within) kept.push(Buffer.from(buffer.subarray(0, bytesRead)))
      else kept.length = 0
    }
  } finally {
    await input.close()
    await output.close()
  }
  return within ? Buffer.concat(kept) : undefined
}

/**
 * Keeps `bytes`, the base's content of `path` at version `token`, as the ancestor of a later
 * merge (`agentfs_overlay_base_content`), when it is text; binary content is not kept.
 */
export async function keepAncestor(
  q: Executor,
  path: string,
  token: string,
  bytes: Uint8Array | undefined,
): Promise<void> {
  if (bytes && mergeableText(bytes))
    await q.execute({
      sql: 'INSERT OR REPLACE INTO agentfs_overlay_base_content (path, token, data) VALUES (?, ?, ?)',
      params: [path, token, bytes],
    })
}

/**
 * The writes an overlay makes on its own behalf: copying base entries up into the delta (content
 * chunk by chunk, keeping mode, owner, times and the base inode number in `fs_origin`),
 * whiteouts that hide base entries, and the base versions a commit later checks
 * (`agentfs_overlay_base_state`).
 */
export class CopyUp {
  /** `ancestors`: keep the base's bytes of text files copied up (the merge ancestor). */
  constructor(
    readonly view: MergedView,
    readonly ancestors = true,
  ) {}

  async recordBase(path: string, stats: Stats): Promise<void> {
    await this.view.q.execute({
      sql: 'INSERT INTO agentfs_overlay_base_state (path, token) VALUES (?, ?) ON CONFLICT(path) DO NOTHING',
      params: [path, stats.version],
    })
  }

  async whiteout(path: string, now: Timestamp): Promise<void> {
    const behind = await this.view.baseBehind(path)
    if (!behind) return
    await this.recordBase(path, behind)
    // Hiding a base directory hides everything below it: remember what that was, so a commit
    // can tell the user's later additions and edits there from what the agent deleted.
    if (behind.isDirectory()) {
      const entries = (await this.view.base.readdir(path, {
        recursive: true,
        withFileTypes: true,
      })) as Dirent[]
      for (const entry of entries) {
        const below = joinPath(entry.parentPath, entry.name)
        const stats = await this.view.base.lstat(below).catch(undefinedIfAbsent)
        if (stats) await this.recordBase(below, stats)
      }
    }
    await this.view.q.execute({
      sql: 'INSERT INTO fs_whiteout (path, parent_path, created_at) VALUES (?, ?, ?) ON CONFLICT(path) DO UPDATE SET created_at = excluded.created_at',
      params: [path, parentPath(path), now.sec],
    })
  }

  async unwhiteout(path: string): Promise<void> {
    await this.view.q.execute({ sql: 'DELETE FROM fs_whiteout WHERE path = ?', params: [path] })
  }

  /** Hides the base's children of `dir` (a directory re-created where a base one was deleted). */
  async opaque(dir: string, now: Timestamp): Promise<void> {
    const behind = await this.view.baseBehind(dir)
    if (!behind?.isDirectory()) return
    for (const name of (await this.view.base.readdir(dir)) as string[])
      await this.whiteout(joinPath(dir, name), now)
  }

  /** Makes `path` exist in the delta, copying the base entry (content chunk by chunk) if needed. */
  async copyUp(path: string): Promise<void> {
    if (await this.view.delta.lstat(path).catch(undefinedIfAbsent)) return
    if (path !== '/') await this.copyUp(parentPath(path))
    const stats = await this.view.baseEntry(path)
    if (!stats) throw fsError('ENOENT', 'copyup', path)
    const mode = stats.mode & 0o7777
    if (stats.isDirectory()) {
      await this.view.delta.mkdir(path, { mode })
    } else if (stats.isSymbolicLink()) {
      await this.view.delta.symlink(await this.view.base.readlink(path), path)
    } else if (stats.isFile()) {
      const input = await this.view.base.open(path, 'r')
      const output = await this.view.delta.open(path, 'wx', mode)
      // The bytes copied (read once) are the ancestor a later merge starts from.
      const bytes = await pump(input, output, this.ancestors ? MERGE_LIMITS.bytes : 0)
      await keepAncestor(this.view.q, path, stats.version, bytes)
    } else {
      await this.view.delta.mknod(path, stats.mode, stats.rdev)
    }
    if (!stats.isSymbolicLink()) await this.view.delta.chmod(path, mode)
    await this.view.delta.lchown(path, stats.uid, stats.gid)
    await this.view.delta.lutimes(path, seconds(stats.atimeNs), seconds(stats.mtimeNs))
    const copied = await this.view.delta.lstat(path)
    await this.view.q.execute({
      sql: 'INSERT OR REPLACE INTO fs_origin (delta_ino, base_ino) VALUES (?, ?)',
      params: [copied.ino, stats.ino],
    })
    await this.recordBase(path, stats)
  }

  /** Copies up `path` and, for a directory, everything visible below it. */
  async copyUpTree(path: string): Promise<void> {
    await this.copyUp(path)
    const node = await this.view.node(path)
    if (!node?.stats.isDirectory()) return
    for (const entry of await this.view.list(path))
      await this.copyUpTree(joinPath(path, entry.name))
  }
}
