import { type Executor, mergeableText, mergeText } from '@agentfs/core'
import type { FileSystem } from '@agentfs/fs'
import type { FileMergeConflict } from './commit-errors.js'
import type { OverlayFs } from './overlay-fs.js'

/** Where a merging commit finds the content a file started from. */
export interface MergeAncestors {
  readonly ancestor: (path: string) => Promise<Uint8Array | undefined>
}

/** The three-way merge of one file: its merged text, or what kept it from merging. */
export async function mergeFile(
  overlay: OverlayFs,
  target: FileSystem,
  merge: MergeAncestors,
  path: string,
): Promise<string | FileMergeConflict> {
  const base = await merge.ancestor(path)
  if (base === undefined)
    return {
      path,
      hunks: [],
      reason: 'changed on both sides, and the version it started from is not known',
    }
  const ours = await overlay.delta.readFile(path)
  const theirs = await target.readFile(path)
  if (![base, ours, theirs].every(mergeableText))
    return { path, hunks: [], reason: 'changed on both sides, and it is not text: pick one side' }
  const decode = (bytes: Uint8Array) => Buffer.from(bytes).toString('utf8')
  const m = mergeText(decode(base), decode(ours), decode(theirs), {
    ours: 'overlay',
    base: 'ancestor',
    theirs: 'target',
  })
  return m.ok
    ? m.text
    : { path, hunks: m.conflicts, text: m.text, ...(m.reason ? { reason: m.reason } : {}) }
}

/**
 * Drops the kept ancestors (`agentfs_overlay_base_content`) that neither the overlay nor a
 * snapshot's overlay state names any more: restoring a snapshot brings back its ancestors too.
 */
export async function dropAncestors(q: Executor): Promise<void> {
  const named = new Set<string>()
  const key = (path: unknown, token: unknown) => `${String(path)}\0${String(token)}`
  const { rows: states } = await q.execute<{ overlay: string }>({
    sql: 'SELECT overlay FROM agentfs_snapshot WHERE overlay IS NOT NULL',
  })
  for (const { overlay } of states) {
    let rows: unknown
    try {
      rows = (JSON.parse(overlay) as Record<string, unknown>).agentfs_overlay_base_state
    } catch {
      continue // a damaged state keeps nothing alive; restoring it reports the damage
    }
    if (Array.isArray(rows))
      for (const row of rows) if (Array.isArray(row)) named.add(key(row[0], row[1]))
  }
  const { rows: kept } = await q.execute<{ path: string; token: string }>({
    sql: 'SELECT path, token FROM agentfs_overlay_base_content',
  })
  for (const row of kept)
    if (!named.has(key(row.path, row.token)))
      await q.execute({
        sql: 'DELETE FROM agentfs_overlay_base_content WHERE path = ? AND token = ?',
        params: [row.path, row.token],
      })
}
