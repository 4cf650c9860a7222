import { isAgentFsError, MERGE_LIMITS, type MergeHunk, mergeText } from '@agentfs/core'
import { ToolFailure } from './failure.js'
import { isText } from './text.js'
import { inTransaction } from './transaction.js'
import type { ToolEnvironment } from './types.js'

/** Lines of each side a merge_conflict answer shows per region (all are in `data`). */
const SHOWN_LINES = 40
/** Regions a merge_conflict answer shows (all are in `data`, within DATA_BYTES). */
const SHOWN_REGIONS = 10
/** Bytes of region text `data.conflicts` carries at most (beyond, line numbers only). */
const DATA_BYTES = 1024 * 1024

/** A version's content, where the filesystem keeps versions (AgentFS's own, `versions: true`). */
type VersionReader = (path: string, options: { version: string }) => Promise<Buffer>

function cut(text: string): string {
  const lines = text.split('\n')
  if (text.endsWith('\n')) lines.pop()
  const shown = lines.slice(0, SHOWN_LINES).join('\n')
  return lines.length > SHOWN_LINES
    ? `${shown}\n… ${lines.length - SHOWN_LINES} more line(s)`
    : shown
}

const lineCount = (text: string) => text.split('\n').length - (text.endsWith('\n') ? 1 : 0)

/** One region of a merge_conflict answer, as the model reads it. */
function region(h: MergeHunk, i: number, expected: string, current: string): string {
  return [
    `Region ${i + 1} — your lines ${h.oursLine}–${h.oursLine + Math.max(0, lineCount(h.ours) - 1)}, current lines ${h.theirsLine}–${h.theirsLine + Math.max(0, lineCount(h.theirs) - 1)}:`,
    '<<<<<<< yours',
    cut(h.ours),
    `||||||| version ${expected} (what you read)`,
    cut(h.base),
    '=======',
    cut(h.theirs),
    `>>>>>>> current (version ${current})`,
  ].join('\n')
}

/**
 * A write with `expected_version` met a file that changed since, and the model asked to merge:
 * merges its content with the changes made since, line by line, against the version it read
 * (which the filesystem must keep). Merged: written with the current version as the
 * precondition (in the write's transaction), and its new version returned. Regions both
 * changed: a `MERGE_CONFLICT` failure listing each (yours, what you read, current) with the
 * current version, to write the resolution with. Nothing is written then.
 */
export async function mergeStaleWrite(
  env: ToolEnvironment,
  fsPath: string,
  display: string,
  expected: string,
  intended: string,
): Promise<{ version: string; merged: string }> {
  const read = (env.fs as { readFile: unknown }).readFile as VersionReader
  const stats = await env.fs.stat(fsPath).catch(() => undefined)
  if (!stats)
    throw new ToolFailure(
      'STALE',
      `File has been deleted since you read it (version ${expected}), so there is nothing to merge with. Write it without expected_version to create it again.`,
    )
  let base: Buffer
  try {
    base = await read.call(env.fs, fsPath, { version: expected })
  } catch {
    throw new ToolFailure(
      'STALE',
      `File has been modified since read (version ${expected}, now ${stats.version}), and version ${expected} is not kept, so your write cannot be merged with the changes. Read it again before attempting to write it.`,
    )
  }
  const current = await env.fs.readFile(fsPath)
  if (current.length > MERGE_LIMITS.bytes || !isText(current) || !isText(base))
    throw new ToolFailure(
      'STALE',
      `File has been modified since read (version ${expected}, now ${stats.version}) and is not text of at most ${MERGE_LIMITS.bytes} bytes, so it cannot be merged. Read it again before attempting to write it.`,
    )
  const m = mergeText(base.toString('utf8'), intended, current.toString('utf8'), {
    ours: 'yours',
    base: `version ${expected}`,
    theirs: `version ${stats.version}`,
  })
  if (!m.ok) {
    if (m.conflicts.length === 0)
      throw new ToolFailure(
        'STALE',
        `File has been modified since read (version ${expected}, now ${stats.version}) and cannot be merged: ${m.reason ?? 'too large'}. Read it again before attempting to write it.`,
      )
    const shown = m.conflicts.slice(0, SHOWN_REGIONS)
    const bytes = m.conflicts.reduce(
      (n, h) => n + h.ours.length + h.base.length + h.theirs.length,
      0,
    )
    throw new ToolFailure(
      'MERGE_CONFLICT',
      [
        `Merge conflict: ${display} changed since you read it (version ${expected}, now ${stats.version}), and ${m.conflicts.length} region(s) were changed both by you and by the others. Nothing was written.`,
        ...shown.map((h, i) => region(h, i, expected, stats.version)),
        ...(m.conflicts.length > shown.length
          ? [`… ${m.conflicts.length - shown.length} more region(s).`]
          : []),
        `Resolve each region, then write the whole file with expected_version ${stats.version}.`,
      ].join('\n'),
      {
        version: stats.version,
        conflicts:
          bytes <= DATA_BYTES
            ? m.conflicts
            : m.conflicts.map(({ oursLine, baseLine, theirsLine }) => ({
                oursLine,
                baseLine,
                theirsLine,
              })),
      },
    )
  }
  try {
    await inTransaction(env.fs, (fs) => fs.writeFile(fsPath, m.text, { ifMatch: stats.version }))
  } catch (error) {
    if (isAgentFsError(error, 'CONFLICT'))
      throw new ToolFailure(
        'STALE',
        `File changed again while your write was being merged (now past version ${stats.version}). Read it again before attempting to write it.`,
      )
    throw error
  }
  return { version: (await env.fs.stat(fsPath)).version, merged: m.text }
}
