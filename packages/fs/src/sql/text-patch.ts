import { AgentFsError, fsError } from '@agentfs/core'
import DiffMatchPatch from 'diff-match-patch'
import type { FileSystem } from '../types.js'

/** Longest patch text accepted, in characters. */
export const MAX_TEXT_PATCH_CHARS = 8 << 20
/** Most patches (hunks) one patch text may carry. */
export const MAX_TEXT_PATCHES = 1_000

/** Options of {@link applyTextPatch}. */
export interface TextPatchOptions {
  /** Refuse (CONFLICT) unless the file's version token is this one, e.g. the version you patched against. */
  readonly ifMatch?: string
}

/** What {@link applyTextPatch} did. */
export interface TextPatchResult {
  /** Hunks applied (all of them: otherwise nothing is written). */
  readonly applied: number
  /** The file's version token after the write. */
  readonly version: string
}

/**
 * Applies a diff-match-patch patch (its text form, `patch_toText`: `@@ -1,13 +1,14 @@` with
 * URL-encoded lines) to a UTF-8 text file, as the Stream-FS RFC's `applyTextPatch`: each hunk
 * is placed by its context with diff-match-patch's fuzzy matching (it may have moved), and the
 * file is written only if every hunk applied — else PATCH_FAILED and the file is unchanged.
 * The write is conditional on the version read (and on `ifMatch` when given): a file changed
 * meanwhile fails with CONFLICT, never a merge over another writer's change.
 */
export async function applyTextPatch(
  fs: FileSystem,
  path: string,
  patch: string,
  options: TextPatchOptions = {},
): Promise<TextPatchResult> {
  if (typeof patch !== 'string' || patch.length === 0)
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      'patch must be a non-empty diff-match-patch patch text',
    )
  if (patch.length > MAX_TEXT_PATCH_CHARS)
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      `a text patch is at most ${MAX_TEXT_PATCH_CHARS} characters; split it into several patches`,
    )
  const dmp = new DiffMatchPatch()
  // A hunk placed fuzzily is diffed against the text it landed on; each such diff is cut off
  // after 20 ms, so a patch of MAX_TEXT_PATCHES hunks cannot hold the process for long.
  dmp.Diff_Timeout = 0.02
  let patches: ReturnType<DiffMatchPatch['patch_fromText']>
  try {
    patches = dmp.patch_fromText(patch)
  } catch (error) {
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      `patch is not a diff-match-patch patch (${(error as Error).message}); make it with patch_toText`,
    )
  }
  if (patches.length === 0)
    throw new AgentFsError('INVALID_ARGUMENT', 'patch holds no hunk (lines starting with @@)')
  if (patches.length > MAX_TEXT_PATCHES)
    throw new AgentFsError('INVALID_ARGUMENT', `a text patch has at most ${MAX_TEXT_PATCHES} hunks`)
  const stats = await fs.stat(path)
  if (stats.isDirectory()) throw fsError('EISDIR', 'open', path)
  if (options.ifMatch !== undefined && options.ifMatch !== stats.version)
    throw new AgentFsError(
      'CONFLICT',
      `${path} is at version ${stats.version}, not ${options.ifMatch}: it changed since the patch was made; read it again`,
    )
  const bytes = await fs.readFile(path)
  let text: string
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes)
  } catch {
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      `${path} is not UTF-8 text; a text patch applies to text files only (replace it with writeFile)`,
    )
  }
  const [patched, results] = dmp.patch_apply(patches, text)
  const failed = results.flatMap((ok, i) => (ok ? [] : [i + 1]))
  if (failed.length > 0)
    throw new AgentFsError(
      'PATCH_FAILED',
      `hunk${failed.length > 1 ? 's' : ''} ${failed.slice(0, 10).join(', ')} of ${results.length} did not apply to ${path} (no close enough context); nothing was written — make the patch against the file as it is`,
    )
  await fs.writeFile(path, patched, { ifMatch: stats.version })
  return { applied: results.length, version: (await fs.stat(path)).version }
}
