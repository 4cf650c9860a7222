import { randomBytes } from 'node:crypto'
import { pipeline } from 'node:stream/promises'
import {
  badEntryName,
  corruptError,
  joinPath,
  parentPath,
  type Queryable,
  ROOT_INO,
  undefinedIfAbsent,
} from '@agentfs/core'
import { compareCodePoints, type Dirent, type FileSystem } from '@agentfs/fs'
import {
  type FileMergeConflict,
  MergeConflictError,
  OverlayConflictError,
} from './commit-errors.js'
import { dropAncestors, type MergeAncestors, mergeFile } from './commit-merge.js'
import { recordUndo, sealUndo } from './commit-undo.js'
import { diffOverlay, type OverlayChange, SPECIAL_BITS, specialBitNames, typeOf } from './diff.js'
import { strictTarget } from './host-fs.js'
import type { OverlayFs } from './overlay-fs.js'

export type { FileMergeConflict } from './commit-errors.js'
export { MergeConflictError, OverlayConflictError } from './commit-errors.js'

/** Options of a commit. */
export interface CommitOptions {
  /**
   * Give committed files and directories their setuid, setgid and sticky bits (default false:
   * they are dropped, so an agent cannot plant a setuid program in the target; the result
   * lists what lost them).
   */
  readonly keepSpecialBits?: boolean
  /**
   * Paths (with everything below them) a commit never changes in the target, whatever the
   * overlay holds there: e.g. the directory of AgentFS's own databases. Their changes are
   * listed in `skipped`.
   */
  readonly protect?: readonly string[]
  /**
   * Keep what the commit replaces on the target under this id (the host's bytes, modes and
   * links before it), so `undoCommit(q, target, id)` can take the commit back. Costs the size
   * of what the commit overwrites or removes, stored in the overlay database.
   */
  readonly undoId?: string
  /**
   * Merge, instead of refusing, a file both the overlay and the target changed since the overlay
   * copied it: `ancestor(path)` gives the content the overlay started from (undefined when not
   * known). Text files merge line by line (`mergeText`): changes in different places are both
   * kept; the same change once. Regions changed differently on both sides, binary files, a file
   * without a known ancestor, and anything but a content edit (a deletion or rename against an
   * edit, a type change) stay conflicts: `MergeConflictError`, nothing committed. Modes are the
   * overlay's. `true`: the ancestors the overlay kept at copy-up (`OverlayFs.ancestor`).
   */
  readonly merge?: true | MergeAncestors
}

/** Result of a commit. */
export interface CommitResult {
  readonly applied: readonly OverlayChange[]
  /** Entries a commit cannot make (FIFOs, sockets, devices): not applied, listed here. */
  readonly skipped?: readonly { readonly path: string; readonly reason: string }[]
  /** Entries committed without the special bits the overlay gave them. */
  readonly droppedBits?: readonly { readonly path: string; readonly bits: readonly string[] }[]
  /** True when this call finished a commit that an earlier, interrupted one had begun. */
  readonly resumed?: boolean
  /** Files both sides changed, merged line by line (with `merge`). */
  readonly merged?: readonly string[]
}

/** A commit that was planned and begun but not finished (the process died mid-way). */
export interface PendingCommit {
  readonly steps: number
  readonly done: number
  /** The paths whose steps have not run yet. */
  readonly pending: readonly string[]
}

/** One step of a commit plan, as the journal stores it. */
interface Step {
  readonly step: number
  readonly op: 'rm' | 'mkdir' | 'symlink' | 'file'
  readonly path: string
  readonly arg: string | null
  readonly mode: number | null
  readonly atime: number | null
  readonly mtime: number | null
  readonly done?: number
}

const JOURNAL = 'agentfs_overlay_commit'
const JOURNAL_DDL = `CREATE TABLE IF NOT EXISTS ${JOURNAL} (
  step INTEGER PRIMARY KEY,
  op TEXT NOT NULL,
  path TEXT NOT NULL,
  arg TEXT,
  mode INTEGER,
  atime REAL,
  mtime REAL,
  done INTEGER NOT NULL DEFAULT 0
)`
const TEMP_PREFIX = '.agentfs-commit-'

async function journalSteps(q: Queryable): Promise<Step[] | undefined> {
  const table = await q.execute({
    sql: `SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = '${JOURNAL}'`,
  })
  if (table.rows.length === 0) return undefined
  const { rows } = await q.execute<Step & { done: number }>({
    sql: `SELECT step, op, path, arg, mode, atime, mtime, done FROM ${JOURNAL} ORDER BY step`,
  })
  return rows
}

/** The commit an interrupted process left half-applied, if any (the next commit finishes it). */
export async function pendingCommit(q: Queryable): Promise<PendingCommit | undefined> {
  const steps = await journalSteps(q)
  if (!steps) return undefined
  const left = steps.filter((s) => !s.done)
  return { steps: steps.length, done: steps.length - left.length, pending: left.map((s) => s.path) }
}

/** A path from the delta database that may reach the host: absolute, normalized, sane names. */
function checkHostPath(path: string): void {
  const parts = path.split('/').slice(1)
  const bad =
    !path.startsWith('/') || path === '/'
      ? 'it is not an absolute path below the root'
      : parts.map((part) => badEntryName(part)).find((reason) => reason !== undefined)
  if (bad !== undefined)
    throw corruptError(
      'commit',
      JSON.stringify(path),
      `an overlay path cannot be applied to the host: a component ${bad}`,
    )
}

/**
 * Applies the delta to a writable target (by default the base itself), then discards it.
 *
 * Guarantees: nothing is touched when the base changed since the overlay saw it — a copied-up
 * or hidden entry, or **anything below a directory the commit removes or replaces** (a file
 * the user added or edited there meanwhile) — or when a path is unsafe (a name that cannot be
 * a component, a link on the way): `OverlayConflictError` or EIO/ELOOP name the paths. Then the
 * plan is written to a journal in the delta database before the first host change; every file
 * is replaced atomically (written to a temporary name, then renamed); a commit killed midway is
 * finished by the next `commit` (and reported by `pendingCommit`), and leaves no temporary
 * file behind once finished. Per file atomic, whole commit resumable — not atomic as a whole.
 */
export async function commitOverlay(
  overlay: OverlayFs,
  q: Queryable,
  baseTarget: FileSystem,
  options: CommitOptions = {},
): Promise<CommitResult> {
  const target = strictTarget(baseTarget)
  const merge =
    options.merge === true ? { ancestor: (path: string) => overlay.ancestor(path) } : options.merge
  const journal = await journalSteps(q)
  if (journal) {
    await runSteps(overlay, q, target, journal)
    return { applied: [], resumed: true }
  }
  const skipped: { path: string; reason: string }[] = []
  const protectedPath = (path: string) =>
    (options.protect ?? []).some((p) => path === p || path.startsWith(`${p}/`))
  const changes: OverlayChange[] = []
  for (const change of await diffOverlay(overlay, q)) {
    if (protectedPath(change.path))
      skipped.push({ path: change.path, reason: 'a protected path: a commit never changes it' })
    else changes.push(change)
  }
  const conflicts: { path: string; reason: string }[] = []
  // Content edits of files the target also changed: merged after the checks, with `merge`.
  const mergeable: string[] = []
  const recorded = async (path: string) => {
    const { rows } = await q.execute<{ token: string }>({
      sql: 'SELECT token FROM agentfs_overlay_base_state WHERE path = ?',
      params: [path],
    })
    return rows[0]?.token
  }
  /** Everything under a directory the commit removes must be what the overlay saw there. */
  const checkBelow = async (dir: string) => {
    const entries = (await target.readdir(dir, {
      recursive: true,
      withFileTypes: true,
    })) as Dirent[]
    const { rows } = await q.execute<{ path: string; token: string }>({
      sql: 'SELECT path, token FROM agentfs_overlay_base_state WHERE path >= ? AND path < ?',
      params: [`${dir}/`, `${dir}0`],
    })
    const tokens = new Map(rows.map((r) => [r.path, r.token]))
    for (const entry of entries) {
      const path = joinPath(entry.parentPath, entry.name)
      const token = tokens.get(path)
      const now = await target.lstat(path).catch(undefinedIfAbsent)
      if (!now) continue
      if (token === undefined)
        conflicts.push({
          path,
          reason: 'created in the base after the overlay removed its directory',
        })
      else if (token !== now.version)
        conflicts.push({
          path,
          reason: 'changed in the base after the overlay removed its directory',
        })
    }
  }
  for (const change of changes) {
    checkHostPath(change.path)
    const current = await target.lstat(change.path).catch(undefinedIfAbsent)
    const token = await recorded(change.path)
    if (change.kind === 'added') {
      if (current && !(current.isDirectory() && change.type === 'directory'))
        conflicts.push({ path: change.path, reason: 'created in the base meanwhile' })
    } else if (!current) {
      conflicts.push({ path: change.path, reason: 'removed from the base meanwhile' })
    } else if (token !== undefined && token !== current.version) {
      if (merge && change.kind === 'modified' && change.type === 'file' && current.isFile())
        mergeable.push(change.path)
      else conflicts.push({ path: change.path, reason: 'changed in the base since it was copied' })
    }
    // A directory that goes away (deleted, or replaced by another type) takes its tree along.
    if (current?.isDirectory() && (change.kind === 'deleted' || change.type !== 'directory'))
      await checkBelow(change.path)
  }
  const merges = new Map<string, string>()
  const failed: FileMergeConflict[] = []
  for (const path of mergeable) {
    const result = await mergeFile(overlay, target, merge!, path)
    if (typeof result === 'string') merges.set(path, result)
    else {
      failed.push(result)
      conflicts.push({ path, reason: result.reason ?? 'changed on both sides in the same place' })
    }
  }
  if (failed.length > 0) throw new MergeConflictError(conflicts, failed)
  if (conflicts.length > 0) throw new OverlayConflictError(conflicts)
  // The merged contents replace the overlay's own: the plan below copies them like any file.
  for (const [path, text] of merges) await overlay.delta.writeFile(path, text)

  // The plan: deletions deepest first, then directories, links and files in path order.
  const plan: Omit<Step, 'step'>[] = []
  const droppedBits: { path: string; bits: string[] }[] = []
  const deletions = changes
    .filter((c) => c.kind === 'deleted')
    .sort((a, b) => compareCodePoints(b.path, a.path))
  for (const change of deletions)
    plan.push({ op: 'rm', path: change.path, arg: null, mode: null, atime: null, mtime: null })
  for (const change of changes.filter((c) => c.kind !== 'deleted')) {
    // Nothing of a change a commit cannot make is applied: not even the removal of what the
    // target has there (a file the overlay replaced by a FIFO stays as it is).
    if (change.type === 'other') {
      skipped.push({
        path: change.path,
        reason: 'a FIFO, socket or device: a commit makes files, directories and links only',
      })
      continue
    }
    const stats = await overlay.delta.lstat(change.path)
    const existing = await target.lstat(change.path).catch(undefinedIfAbsent)
    if (existing && (typeOf(existing) !== change.type || change.type === 'symlink'))
      plan.push({ op: 'rm', path: change.path, arg: null, mode: null, atime: null, mtime: null })
    let mode = stats.mode & 0o7777
    if (!options.keepSpecialBits && mode & SPECIAL_BITS && change.type !== 'symlink') {
      droppedBits.push({ path: change.path, bits: specialBitNames(mode) })
      mode &= ~SPECIAL_BITS
    }
    if (change.type === 'directory')
      plan.push({ op: 'mkdir', path: change.path, arg: null, mode, atime: null, mtime: null })
    else if (change.type === 'symlink')
      plan.push({
        op: 'symlink',
        path: change.path,
        arg: await overlay.delta.readlink(change.path),
        mode: null,
        atime: null,
        mtime: null,
      })
    else if (change.type === 'file')
      plan.push({
        op: 'file',
        path: change.path,
        arg: randomBytes(6).toString('hex'),
        mode,
        atime: Number(stats.atimeNs) / 1e9,
        mtime: Number(stats.mtimeNs) / 1e9,
      })
  }
  // Written before the first change to the host: from here on a crash is resumable.
  await q.transaction(async (tx) => {
    if (options.undoId !== undefined)
      await recordUndo(
        tx,
        target,
        options.undoId,
        [...new Set(plan.map((s) => s.path))],
        new Set(plan.filter((s) => s.op === 'rm').map((s) => s.path)),
        new Set(merges.keys()),
      )
    await tx.execute({ sql: JOURNAL_DDL })
    for (const [index, step] of plan.entries())
      await tx.execute({
        sql: `INSERT INTO ${JOURNAL} (step, op, path, arg, mode, atime, mtime) VALUES (?, ?, ?, ?, ?, ?, ?)`,
        params: [index, step.op, step.path, step.arg, step.mode, step.atime, step.mtime],
      })
  })
  await runSteps(
    overlay,
    q,
    target,
    plan.map((step, index) => ({ ...step, step: index })),
  )
  const skippedPaths = new Set(skipped.map((s) => s.path))
  return {
    applied: changes.filter((c) => !skippedPaths.has(c.path)),
    ...(merges.size > 0 ? { merged: [...merges.keys()] } : {}),
    ...(skipped.length > 0 ? { skipped } : {}),
    ...(droppedBits.length > 0 ? { droppedBits } : {}),
  }
}

const tempOf = (step: Step) => joinPath(parentPath(step.path), `${TEMP_PREFIX}${step.arg}`)

/** Runs the journal's steps that have not run, marking each done, then discards the delta. */
async function runSteps(
  overlay: OverlayFs,
  q: Queryable,
  target: FileSystem,
  steps: readonly Step[],
): Promise<void> {
  for (const step of steps) {
    if (step.done) continue
    checkHostPath(step.path)
    await applyStep(overlay, target, step)
    await q.execute({ sql: `UPDATE ${JOURNAL} SET done = 1 WHERE step = ?`, params: [step.step] })
  }
  await sealUndo(q, target)
  await discardOverlay(q)
}

/** One step, idempotent: running it again after a crash gives the same result. */
async function applyStep(overlay: OverlayFs, target: FileSystem, step: Step): Promise<void> {
  switch (step.op) {
    case 'rm':
      await target.rm(step.path, { recursive: true, force: true })
      return
    case 'mkdir':
      await target.mkdir(step.path, { recursive: true })
      await target.chmod(step.path, step.mode ?? 0o755)
      return
    case 'symlink':
      await target.rm(step.path, { force: true })
      await target.symlink(step.arg ?? '', step.path)
      return
    case 'file': {
      const temporary = tempOf(step)
      // A crash may have left this step's temporary file: start it again.
      await target.rm(temporary, { force: true })
      try {
        await pipeline(
          overlay.delta.createReadStream(step.path),
          target.createWriteStream(temporary, { mode: step.mode ?? 0o644, flags: 'wx' }),
        )
        await target.chmod(temporary, step.mode ?? 0o644)
        await target.utimes(temporary, step.atime ?? 0, step.mtime ?? 0)
        await target.rename(temporary, step.path)
      } catch (error) {
        await target.rm(temporary, { force: true }).catch(() => undefined)
        throw error
      }
      return
    }
  }
}

/** Deletes the whole delta filesystem and its overlay bookkeeping, in one transaction. */
export async function discardOverlay(q: Queryable): Promise<void> {
  await q.transaction(async (tx) => {
    for (const sql of [
      'DELETE FROM fs_dentry',
      'DELETE FROM fs_data',
      'DELETE FROM fs_symlink',
      `DELETE FROM fs_inode WHERE ino != ${ROOT_INO}`,
      'DELETE FROM fs_whiteout',
      'DELETE FROM fs_origin',
      'DELETE FROM agentfs_overlay_base_state',
      `DROP TABLE IF EXISTS ${JOURNAL}`,
    ]) {
      await tx.execute({ sql })
    }
    await dropAncestors(tx)
  })
}
