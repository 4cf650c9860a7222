import { diffTextBudget, type Executor, unifiedDiff } from '@agentfs/core'
import { isDirMode, isLinkMode, isRegMode, type SnapInode } from './rows.js'
import { contentOf, walkAt } from './view.js'

/** One difference between two states of the tree (or of the kv store). */
export interface SnapshotChange {
  readonly path: string
  readonly kind: 'added' | 'modified' | 'deleted'
  readonly type: 'file' | 'directory' | 'symlink' | 'other' | 'kv'
  /**
   * Unified diff, for text files up to 1 MiB on both sides, while the diff's text budget lasts
   * (see {@link DiffOptions.maxTextBytes}); files after it is spent are listed without one.
   */
  readonly diff?: string
}

/** Options of {@link diffSnapshots} and `history.diff`. */
export interface DiffOptions {
  /**
   * Bytes of file content, both sides counted, that unified diffs are made of at most in one
   * call (default 64 MiB): a tree of many large text files cannot make one diff hold them all
   * in memory. The changes themselves are all listed.
   */
  readonly maxTextBytes?: number
}

const TEXT_LIMIT = 1024 * 1024

const typeOf = (mode: number): SnapshotChange['type'] =>
  isRegMode(mode) ? 'file' : isDirMode(mode) ? 'directory' : isLinkMode(mode) ? 'symlink' : 'other'

function sameBytes(a: Uint8Array | null, b: Uint8Array | null): boolean {
  if (a === null || b === null) return a === b
  return Buffer.compare(a, b) === 0
}

/** Whether the entry at a path differs in anything a user sees (times of access and change aside). */
function differs(a: SnapInode, b: SnapInode): boolean {
  return (
    typeOf(a.mode) !== typeOf(b.mode) ||
    a.mode !== b.mode ||
    a.uid !== b.uid ||
    a.gid !== b.gid ||
    a.size !== b.size ||
    a.target !== b.target ||
    (!isDirMode(a.mode) && (a.mtime !== b.mtime || a.mtime_nsec !== b.mtime_nsec)) ||
    !sameBytes(a.chunks, b.chunks)
  )
}

async function textDiff(
  q: Executor,
  path: string,
  before: SnapInode | undefined,
  after: SnapInode | undefined,
  budget: ReturnType<typeof diffTextBudget>,
): Promise<string | undefined> {
  for (const side of [before, after])
    if (side && (!isRegMode(side.mode) || side.size > TEXT_LIMIT)) return undefined
  if (!budget.take((before?.size ?? 0) + (after?.size ?? 0))) return undefined
  const a = before ? await contentOf(q, before, path) : Buffer.alloc(0)
  const b = after ? await contentOf(q, after, path) : Buffer.alloc(0)
  if (a.subarray(0, 8192).includes(0) || b.subarray(0, 8192).includes(0)) return undefined
  // Bounded: a minimal diff within the budget, else one linear hunk, else a summary line.
  return unifiedDiff(path, path, a.toString('utf8'), b.toString('utf8')).text
}

/**
 * What differs from snapshot `from` to snapshot `to`: entries added, deleted and modified
 * (content, type, mode, owner, link target, modification time), in path order, with unified
 * diffs for text files; then kv keys as `kv:<key>`.
 */
export async function diffSnapshots(
  q: Executor,
  from: number,
  to: number,
  options: DiffOptions = {},
): Promise<SnapshotChange[]> {
  const budget = diffTextBudget(options.maxTextBytes)
  const withDiff = async (
    path: string,
    was: SnapInode | undefined,
    now: SnapInode | undefined,
  ): Promise<{ diff?: string }> => {
    const diff = await textDiff(q, path, was, now, budget)
    return diff === undefined ? {} : { diff }
  }
  const before = new Map<string, SnapInode>()
  for await (const { path, node } of walkAt(q, from)) before.set(path, node)
  const changes: SnapshotChange[] = []
  const seen = new Set<string>()
  for await (const { path, node } of walkAt(q, to)) {
    seen.add(path)
    if (path === '/') continue
    const was = before.get(path)
    if (!was) {
      changes.push({
        path,
        kind: 'added',
        type: typeOf(node.mode),
        ...(await withDiff(path, undefined, node)),
      })
    } else if (differs(was, node)) {
      changes.push({
        path,
        kind: 'modified',
        type: typeOf(node.mode),
        ...(await withDiff(path, was, node)),
      })
    }
  }
  for (const [path, node] of before) {
    if (seen.has(path)) continue
    changes.push({
      path,
      kind: 'deleted',
      type: typeOf(node.mode),
      ...(await withDiff(path, node, undefined)),
    })
  }
  changes.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
  return [...changes, ...(await diffKv(q, from, to))]
}

async function diffKv(q: Executor, from: number, to: number): Promise<SnapshotChange[]> {
  const at = async (id: number) => {
    const { rows } = await q.execute<{ key: string; value: string }>({
      sql: 'SELECT key, value FROM agentfs_snap_kv k WHERE k.since <= ? AND (k.until IS NULL OR k.until > ?)',
      params: [id, id],
    })
    return new Map(rows.map((r) => [r.key, r.value]))
  }
  const a = await at(from)
  const b = await at(to)
  const out: SnapshotChange[] = []
  for (const [key, value] of b) {
    const was = a.get(key)
    if (was === undefined) out.push({ path: `kv:${key}`, kind: 'added', type: 'kv' })
    else if (was !== value) out.push({ path: `kv:${key}`, kind: 'modified', type: 'kv' })
  }
  for (const key of a.keys())
    if (!b.has(key)) out.push({ path: `kv:${key}`, kind: 'deleted', type: 'kv' })
  return out.sort((x, y) => (x.path < y.path ? -1 : x.path > y.path ? 1 : 0))
}
