import {
  diffTextBudget,
  joinPath,
  type Queryable,
  undefinedIfAbsent,
  unifiedDiff,
} from '@agentfs/core'
import type { Dirent, FileSystem, Stats } from '@agentfs/fs'
import type { OverlayFs } from './overlay-fs.js'

/** One difference between the overlay and its base. */
export interface OverlayChange {
  readonly path: string
  readonly kind: 'added' | 'modified' | 'deleted'
  readonly type: 'file' | 'directory' | 'symlink' | 'other'
  /**
   * Unified diff, for text files up to 1 MiB, while the diff's text budget lasts (see
   * {@link OverlayDiffOptions.maxTextBytes}); files after it is spent are listed without one.
   */
  readonly diff?: string
  /**
   * Permission bits (`mode & 0o7777`) before and after, when they changed (an added entry:
   * after only). Setuid, setgid and sticky bits are kept here as the agent set them; a commit
   * drops them unless asked to keep them (see {@link SPECIAL_BITS}).
   */
  readonly mode?: { readonly before?: number; readonly after: number }
  /** Owner before and after, when it changed (a commit to a host directory applies no owner). */
  readonly owner?: {
    readonly before: { readonly uid: number; readonly gid: number }
    readonly after: { readonly uid: number; readonly gid: number }
  }
}

/** Setuid, setgid and sticky: never given to host files by a commit or export unless asked. */
export const SPECIAL_BITS = 0o7000

/** The names of the special bits set in `mode`. */
export function specialBitNames(mode: number): string[] {
  return [
    ...(mode & 0o4000 ? ['setuid'] : []),
    ...(mode & 0o2000 ? ['setgid'] : []),
    ...(mode & 0o1000 ? ['sticky'] : []),
  ]
}

export const typeOf = (s: Stats): OverlayChange['type'] =>
  s.isFile() ? 'file' : s.isDirectory() ? 'directory' : s.isSymbolicLink() ? 'symlink' : 'other'

/** Options of {@link diffOverlay} and `overlay.diff`. */
export interface OverlayDiffOptions {
  /**
   * Bytes of file content, both sides counted, that unified diffs are made of at most in one
   * call (default 64 MiB): many large text files cannot make one diff hold them all in memory.
   * Every change is still listed.
   */
  readonly maxTextBytes?: number
}

const TEXT_LIMIT = 1024 * 1024
const isText = (bytes: Buffer) => !bytes.subarray(0, 8192).includes(0)

async function sameContent(
  a: FileSystem,
  b: FileSystem,
  path: string,
  size: number,
): Promise<boolean> {
  if (size <= 64 * 1024 * 1024)
    return Buffer.compare(await a.readFile(path), await b.readFile(path)) === 0
  const ha = await a.open(path, 'r')
  const hb = await b.open(path, 'r')
  try {
    const x = Buffer.allocUnsafe(1 << 20)
    const y = Buffer.allocUnsafe(1 << 20)
    for (let position = 0; position < size; position += 1 << 20) {
      const r1 = await ha.read(x, 0, x.length, position)
      const r2 = await hb.read(y, 0, y.length, position)
      if (
        r1.bytesRead !== r2.bytesRead ||
        Buffer.compare(x.subarray(0, r1.bytesRead), y.subarray(0, r2.bytesRead)) !== 0
      )
        return false
    }
    return true
  } finally {
    await ha.close()
    await hb.close()
  }
}

async function textDiff(
  overlay: OverlayFs,
  path: string,
  before: Stats | undefined,
  after: Stats | undefined,
  budget: ReturnType<typeof diffTextBudget>,
) {
  if (
    (before && (!before.isFile() || before.size > TEXT_LIMIT)) ||
    (after && (!after.isFile() || after.size > TEXT_LIMIT))
  )
    return undefined
  if (!budget.take((before?.size ?? 0) + (after?.size ?? 0))) return undefined
  const old = before ? await overlay.base.readFile(path) : Buffer.alloc(0)
  const now = after ? await overlay.delta.readFile(path) : Buffer.alloc(0)
  if (!isText(old) || !isText(now)) return undefined
  // Bounded: a minimal diff within the budget, else one linear hunk, else a summary line.
  return unifiedDiff(
    before ? `a${path}` : '/dev/null',
    after ? `b${path}` : '/dev/null',
    old.toString('utf8'),
    now.toString('utf8'),
  ).text
}

/** What the overlay changed relative to its base: added, modified and deleted entries. */
export async function diffOverlay(
  overlay: OverlayFs,
  q: Queryable,
  options: OverlayDiffOptions = {},
): Promise<OverlayChange[]> {
  const budget = diffTextBudget(options.maxTextBytes)
  const changes: OverlayChange[] = []
  const entries = (await overlay.delta.readdir('/', {
    recursive: true,
    withFileTypes: true,
  })) as Dirent[]
  for (const entry of entries) {
    const path = joinPath(entry.parentPath, entry.name)
    const now = await overlay.delta.lstat(path)
    const before = await overlay.base.lstat(path).catch(undefinedIfAbsent)
    if (!before) {
      changes.push({
        path,
        kind: 'added',
        type: typeOf(now),
        ...withDiff(await textDiff(overlay, path, undefined, now, budget)),
        ...(now.isSymbolicLink() ? {} : { mode: { after: now.mode & 0o7777 } }),
      })
      continue
    }
    const modeChanged = !now.isSymbolicLink() && (before.mode & 0o7777) !== (now.mode & 0o7777)
    const ownerChanged = before.uid !== now.uid || before.gid !== now.gid
    let modified = typeOf(before) !== typeOf(now) || modeChanged || ownerChanged
    if (!modified && now.isFile())
      modified =
        before.size !== now.size ||
        !(await sameContent(overlay.base, overlay.delta, path, now.size))
    if (!modified && now.isSymbolicLink())
      modified = (await overlay.base.readlink(path)) !== (await overlay.delta.readlink(path))
    if (modified) {
      changes.push({
        path,
        kind: 'modified',
        type: typeOf(now),
        ...withDiff(await textDiff(overlay, path, before, now, budget)),
        ...(modeChanged
          ? { mode: { before: before.mode & 0o7777, after: now.mode & 0o7777 } }
          : {}),
        ...(ownerChanged
          ? {
              owner: {
                before: { uid: before.uid, gid: before.gid },
                after: { uid: now.uid, gid: now.gid },
              },
            }
          : {}),
      })
    }
  }
  const { rows } = await q.execute<{ path: string }>({
    sql: 'SELECT path FROM fs_whiteout ORDER BY path',
  })
  for (const { path } of rows) {
    if (await overlay.delta.lstat(path).catch(undefinedIfAbsent)) continue
    const before = await overlay.base.lstat(path).catch(undefinedIfAbsent)
    if (before)
      changes.push({
        path,
        kind: 'deleted',
        type: typeOf(before),
        ...withDiff(await textDiff(overlay, path, before, undefined, budget)),
      })
  }
  return changes.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
}

const withDiff = (diff: string | undefined) => (diff === undefined ? {} : { diff })
