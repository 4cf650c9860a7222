import type { Change, ChangeQuery } from '@agentfs/core'
import type { SnapshotChange, SnapshotInfo } from '@agentfs/history'
import type { KvEntry } from '@agentfs/kv'
import { type OverlayChange, openOverlay, readOverlayBase } from '@agentfs/overlay'
import type { Inspection } from '../context.js'
import { HttpError, LIMITS } from '../limits.js'
import { visible } from './calls.js'

/** Filters of the change feed. */
export interface ChangeFilters {
  /** Changes of this path and below. */
  readonly path?: string | undefined
  readonly sessionId?: string | undefined
  /** Only kv (`kv`) or only filesystem (`fs`) changes. */
  readonly store?: 'fs' | 'kv' | undefined
}

/** A page of the feed, newest first; `cursor` continues it (older). */
export interface FeedPage {
  readonly changes: Change[]
  readonly cursor: number | null
  /** The newest sequence number now: follow from it for live changes. */
  readonly last: number
}

const query = (f: ChangeFilters): ChangeQuery => ({
  ...(f.path === undefined ? {} : { path: f.path, recursive: true }),
  ...(f.store === undefined ? {} : { store: f.store }),
})

/** Whether a change passes the filters the feed query cannot apply (session, policy). */
export const passes = (ins: Inspection, f: ChangeFilters, c: Change): boolean =>
  (f.sessionId === undefined || c.sessionId === f.sessionId) && visible(ins, c)

/**
 * A page of changes before `cursor` (0: the newest), newest first. Rows the session filter or
 * the policy leave out are skipped within a bounded scan (10 pages' worth), so a page may be
 * short; `cursor` still continues it.
 */
export async function feed(
  ins: Inspection,
  filters: ChangeFilters,
  cursor: number,
  limit: number,
): Promise<FeedPage> {
  const last = await ins.agent.changes.last()
  const out: Change[] = []
  let at = cursor
  let scanned = 0
  let more = true
  while (more && out.length < limit && scanned < limit * 10) {
    const page = await ins.agent.changes.since(at, {
      ...query(filters),
      reverse: true,
      limit: Math.min(LIMITS.maxPage, limit),
    })
    more = page.more
    if (page.changes.length === 0) break
    for (const [i, c] of page.changes.entries()) {
      if (out.length === limit) {
        more = true
        break
      }
      at = c.seq
      scanned++
      if (passes(ins, filters, c)) out.push(c)
      if (i === page.changes.length - 1) more = page.more
    }
  }
  return { changes: out, cursor: more ? at : null, last }
}

/** Everything after `cursor`, then each new change, for the live view (server-sent events). */
export async function* follow(
  ins: Inspection,
  filters: ChangeFilters,
  cursor: number,
  signal: AbortSignal,
): AsyncGenerator<Change> {
  for await (const c of ins.agent.changes.follow({
    ...query(filters),
    cursor,
    signal,
    intervalMs: 100,
  }))
    if (passes(ins, filters, c)) yield c
}

/** The snapshots, oldest first. */
export function snapshots(ins: Inspection): Promise<SnapshotInfo[]> {
  return ins.agent.history.listSnapshots()
}

/** What changed from snapshot `from` to `to` (default: now), each text file's unified diff. */
export async function snapshotDiff(
  ins: Inspection,
  from: string,
  to: string | undefined,
): Promise<BoundedDiff<SnapshotChange>> {
  for (const name of [from, to])
    if (name !== undefined && !(await ins.agent.history.getSnapshot(name)))
      throw new HttpError(404, `no snapshot named '${name}'`)
  const changes = await ins.agent.history.diff(from, to)
  return bounded(changes.filter((c) => c.type === 'kv' || ins.readable(c.path)))
}

/** A diff's changes within the answer's budget: at most so many, diffs up to so many characters. */
export interface BoundedDiff<C> {
  readonly changes: C[]
  /** Changes left out past `LIMITS.diffChanges`, or diffs dropped past `LIMITS.diffChars`. */
  readonly truncated: boolean
}

export function bounded<C extends { diff?: string }>(
  all: C[],
  maxChanges: number = LIMITS.diffChanges,
  maxChars: number = LIMITS.diffChars,
): BoundedDiff<C> {
  let chars = 0
  let truncated = all.length > maxChanges
  const changes = all.slice(0, maxChanges).map((c) => {
    if (c.diff === undefined) return c
    chars += c.diff.length
    if (chars <= maxChars) return c
    truncated = true
    const { diff: _dropped, ...rest } = c
    return rest as C
  })
  return { changes, truncated }
}

/** What this database (a branch or an overlay) changed relative to its base; null when it has none. */
export async function branchDiff(
  ins: Inspection,
): Promise<({ base: unknown } & BoundedDiff<OverlayChange>) | null> {
  const base = await readOverlayBase(ins.agent.db)
  if (!base) return null
  if (!ins.options.openBase)
    throw new HttpError(
      409,
      'this database is a branch or overlay, but the inspector was not given a way to open its base (openBase)',
    )
  const overlay = await openOverlay(ins.agent.db, { openBase: ins.options.openBase })
  const changes = await overlay.diff()
  return { base, ...bounded(changes.filter((c) => ins.readable(c.path))) }
}

/** A kv entry as shown: the value whole up to `LIMITS.kvValueBytes` of JSON, else cut. */
export interface KvView {
  readonly key: string
  readonly version: number
  readonly createdAt: number
  readonly updatedAt: number
  /** The value as indented JSON. */
  readonly json: string
  readonly truncated: boolean
}

const view = (e: KvEntry): KvView => {
  const json = JSON.stringify(e.value, null, 2) ?? 'null'
  return {
    key: e.key,
    version: e.version,
    createdAt: e.createdAt,
    updatedAt: e.updatedAt,
    json: json.length > LIMITS.kvValueBytes ? json.slice(0, LIMITS.kvValueBytes) : json,
    truncated: json.length > LIMITS.kvValueBytes,
  }
}

/** A page of keys under `prefix`, in key order, with their values. */
export async function kvPage(
  ins: Inspection,
  prefix: string,
  cursor: string | undefined,
  limit: number,
): Promise<{ entries: KvView[]; cursor: string | null }> {
  const page = await ins.agent.kv.list({
    prefix,
    limit,
    ...(cursor === undefined ? {} : { cursor }),
  })
  return { entries: page.entries.map(view), cursor: page.cursor ?? null }
}

/** One key: its value and its changes in the feed (newest first, at most `limit`). */
export async function kvEntry(
  ins: Inspection,
  key: string,
  limit: number,
): Promise<{ entry: KvView | null; changes: Change[] }> {
  const entry = await ins.agent.kv.getEntry(key)
  const page = await ins.agent.changes.since(0, { path: key, store: 'kv', reverse: true, limit })
  if (!entry && page.changes.length === 0) throw new HttpError(404, `no key '${key}'`)
  return { entry: entry ? view(entry) : null, changes: page.changes }
}
