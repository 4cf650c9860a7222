import { parsePatch } from 'diff'
import { ToolFailure } from '../failure.js'

/** One hunk of changes to a file: the lines it expects and the lines it puts there. */
export interface PatchHunk {
  /** How the model wrote it (`@@ -3,4 +3,5 @@`, `@@ def f():`), for messages. */
  readonly header: string
  /** The hunk's lines in order: ` ` kept, `-` removed, `+` added. */
  readonly lines: ReadonlyArray<{ readonly op: ' ' | '-' | '+'; readonly text: string }>
  /** Unified diff: the 1-based line its old side starts at (a hint where to look first). */
  readonly oldStart?: number
  /** `*** Begin Patch`: a line to find first (`@@ class Foo`), searching from the hunk before. */
  readonly anchor?: string
  /** The hunk ends at the end of the file (`*** End of File`, or a unified diff's last lines). */
  readonly endOfFile: boolean
  /** The new side has no final newline (`\ No newline at end of file` after its last line). */
  readonly noFinalNewline: boolean
}

export type FilePatch =
  | { readonly kind: 'add'; readonly path: string; readonly content: string }
  | { readonly kind: 'delete'; readonly path: string }
  | {
      readonly kind: 'update'
      readonly path: string
      readonly moveTo?: string
      readonly hunks: readonly PatchHunk[]
    }

/** Longest patch accepted, in characters. */
export const MAX_PATCH_CHARS = 8 << 20
/** Most files and hunks one patch may carry. */
export const MAX_PATCH_FILES = 1_000
export const MAX_PATCH_HUNKS = 10_000

const invalid = (message: string) =>
  new ToolFailure('EINVAL', `Error: the patch is not valid: ${message}. Nothing was changed.`)

/** Parses a patch in either format: `*** Begin Patch` or a (multi-file) unified diff. */
export function parseAnyPatch(patch: string): FilePatch[] {
  if (patch.length > MAX_PATCH_CHARS)
    throw invalid(`it is longer than ${MAX_PATCH_CHARS} characters; split it into several patches`)
  const text = patch.replace(/\r\n/g, '\n')
  const files = /^\s*\*\*\* Begin Patch/.test(text) ? parseBeginPatch(text) : parseUnified(text)
  if (files.length === 0) throw invalid('it changes no file')
  if (files.length > MAX_PATCH_FILES)
    throw invalid(`it changes more than ${MAX_PATCH_FILES} files; split it`)
  const hunks = files.reduce((n, f) => n + (f.kind === 'update' ? f.hunks.length : 0), 0)
  if (hunks > MAX_PATCH_HUNKS) throw invalid(`it has more than ${MAX_PATCH_HUNKS} hunks; split it`)
  return files
}

/**
 * The `*** Begin Patch` format: `*** Add File: p` (then `+` lines), `*** Delete File: p`,
 * `*** Update File: p` (optionally `*** Move to: q`) with hunks each opened by `@@` or
 * `@@ <a line to find first>`, lines prefixed by ` `, `-` or `+`, and `*** End of File` when a
 * hunk ends at the file's end; closed by `*** End Patch`.
 */
export function parseBeginPatch(text: string): FilePatch[] {
  const lines = text.split('\n')
  let i = lines.findIndex((l) => l.trim() !== '')
  if (lines[i]?.trim() !== '*** Begin Patch')
    throw invalid('the first line must be *** Begin Patch')
  i++
  const files: FilePatch[] = []
  let ended = false
  const header = (line: string, prefix: string) =>
    line.startsWith(prefix) ? line.slice(prefix.length).trim() : undefined
  while (i < lines.length) {
    const line = lines[i]!
    if (line.trim() === '*** End Patch') {
      ended = true
      break
    }
    const added = header(line, '*** Add File: ')
    const deleted = header(line, '*** Delete File: ')
    const updated = header(line, '*** Update File: ')
    if (added !== undefined) {
      const path = added
      i++
      const body: string[] = []
      while (i < lines.length && lines[i]!.startsWith('+')) body.push(lines[i++]!.slice(1))
      files.push({ kind: 'add', path, content: body.length === 0 ? '' : `${body.join('\n')}\n` })
      continue
    }
    if (deleted !== undefined) {
      files.push({ kind: 'delete', path: deleted })
      i++
      continue
    }
    if (updated !== undefined) {
      const path = updated
      i++
      const moveTo = header(lines[i] ?? '', '*** Move to: ')
      if (moveTo !== undefined) i++
      const hunks: PatchHunk[] = []
      let current:
        | { header: string; anchor?: string; lines: PatchHunk['lines'][number][] }
        | undefined
      const close = (endOfFile: boolean) => {
        if (current === undefined) return
        if (current.lines.length === 0 && current.anchor === undefined) {
          current = undefined
          return
        }
        if (!current.lines.some((l) => l.op !== ' '))
          throw invalid(`a hunk of ${path} (${current.header}) changes nothing`)
        hunks.push({ ...current, endOfFile, noFinalNewline: false })
        current = undefined
      }
      for (; i < lines.length; i++) {
        const l = lines[i]!
        if (l.startsWith('@@')) {
          close(false)
          const anchor = l.slice(2).trim()
          current = { header: l, lines: [], ...(anchor === '' ? {} : { anchor }) }
          continue
        }
        if (l.trim() === '*** End of File') {
          close(true)
          continue
        }
        if (l.startsWith('***')) break
        const op = l[0]
        current ??= { header: `hunk ${hunks.length + 1}`, lines: [] }
        if (op === ' ' || op === '-' || op === '+') current.lines.push({ op, text: l.slice(1) })
        // A blank line between hunk lines is an empty context line whose space was left out.
        else if (l === '') {
          let j = i + 1
          while (lines[j] === '') j++
          if (/^[ +-]/.test(lines[j] ?? '')) current.lines.push({ op: ' ', text: '' })
        } else
          throw invalid(
            `line ${i + 1} (${JSON.stringify(l.slice(0, 60))}) in ${path} starts with neither space, -, + nor @@`,
          )
      }
      close(false)
      if (hunks.length === 0 && moveTo === undefined)
        throw invalid(`*** Update File: ${path} has no hunk`)
      files.push({ kind: 'update', path, ...(moveTo === undefined ? {} : { moveTo }), hunks })
      continue
    }
    if (line.trim() === '') {
      i++
      continue
    }
    throw invalid(
      `line ${i + 1} (${JSON.stringify(line.slice(0, 60))}) is not *** Add File:, *** Delete File:, *** Update File: or *** End Patch`,
    )
  }
  if (!ended) throw invalid('it does not end with *** End Patch')
  for (const f of files) if (f.path === '') throw invalid('a file header names no path')
  return files
}

/** `a/src/x.ts` → `src/x.ts` (git's prefixes); a timestamp after a tab is dropped. */
function diffPath(name: string | undefined): string | undefined {
  if (name === undefined) return undefined
  const bare = name.split('\t')[0]!.trim()
  if (bare === '/dev/null') return undefined
  return bare.replace(/^[ab]\//, '')
}

/** A unified diff of one or more files (`---`/`+++` headers; `/dev/null` adds or deletes). */
export function parseUnified(text: string): FilePatch[] {
  let parsed: ReturnType<typeof parsePatch>
  try {
    parsed = parsePatch(text)
  } catch (error) {
    throw invalid(
      `it is neither a unified diff nor a *** Begin Patch block (${(error as Error).message})`,
    )
  }
  const files: FilePatch[] = []
  for (const p of parsed) {
    if (p.hunks.length === 0) continue
    const from = diffPath(p.oldFileName)
    const to = diffPath(p.newFileName)
    if (from === undefined && to === undefined)
      throw invalid('a file has /dev/null on both sides (or no --- and +++ header)')
    const hunks: PatchHunk[] = p.hunks.map((h) => {
      const lines: PatchHunk['lines'][number][] = []
      let noFinalNewline = false
      for (const l of h.lines) {
        if (l.startsWith('\\')) {
          // "\ No newline at end of file" after a line of the new side.
          if (lines.at(-1)?.op !== '-') noFinalNewline = true
          continue
        }
        const op = l[0]
        if (op !== ' ' && op !== '-' && op !== '+') continue
        lines.push({ op, text: l.slice(1) })
      }
      return {
        header: `@@ -${h.oldStart},${h.oldLines} +${h.newStart},${h.newLines} @@`,
        lines,
        oldStart: h.oldStart,
        endOfFile: noFinalNewline,
        noFinalNewline,
      }
    })
    if (from === undefined) {
      const added = hunks.flatMap((h) => h.lines.filter((l) => l.op !== '-').map((l) => l.text))
      const last = hunks.at(-1)!
      files.push({
        kind: 'add',
        path: to!,
        content: added.length === 0 ? '' : `${added.join('\n')}${last.noFinalNewline ? '' : '\n'}`,
      })
    } else if (to === undefined) files.push({ kind: 'delete', path: from })
    else files.push({ kind: 'update', path: from, ...(to === from ? {} : { moveTo: to }), hunks })
  }
  if (files.length === 0)
    throw invalid(
      'no file header (--- a/path, +++ b/path) with a hunk (@@ -1,2 +1,3 @@) was found, and it does not start with *** Begin Patch',
    )
  return files
}
