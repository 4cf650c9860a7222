import { unifiedDiff } from '@agentfs/core'
import { contentTypeOf } from '@agentfs/fs'

/** True when bytes look like text: fs's `contentTypeOf` (no NUL in the first 8 KiB). */
export const isText = (bytes: Uint8Array) => contentTypeOf(bytes) === 'text'

/** Lines of a text, without the empty string after a final newline. */
export function splitLines(text: string): string[] {
  const lines = text.split('\n')
  if (lines.length > 0 && lines.at(-1) === '') lines.pop()
  return lines
}

/** `cat -n` style: the number right-aligned to 6, a tab, the line (cut past `maxLineLength`). */
export function numbered(lines: readonly string[], first: number, maxLineLength: number): string {
  return lines
    .map((line, i) => {
      const cut =
        line.length > maxLineLength
          ? `${line.slice(0, maxLineLength)}… [line truncated: ${line.length} characters]`
          : line
      return `${String(first + i).padStart(6)}\t${cut}`
    })
    .join('\n')
}

/** 1-based line numbers where `needle` starts in `text`. */
export function matchLines(text: string, needle: string): number[] {
  const lines: number[] = []
  let from = 0
  for (;;) {
    const at = text.indexOf(needle, from)
    if (at === -1) return lines
    lines.push(text.slice(0, at).split('\n').length)
    from = at + Math.max(needle.length, 1)
  }
}

/**
 * A short unified diff (at most `maxLines` lines), within the diff budget of `unifiedDiff`: a
 * wholly rewritten file gives one linear hunk, never seconds of diffing.
 */
export function shortDiff(path: string, before: string, after: string, maxLines = 60): string {
  const patch = unifiedDiff(`a${path}`, `b${path}`, before, after, { context: 2 }).text
  const lines = patch.split('\n').slice(2)
  return lines.length > maxLines
    ? `${lines.slice(0, maxLines).join('\n')}\n… [diff truncated]`
    : lines.join('\n')
}

/** Caps a tool result, saying how to continue. */
export function cap(text: string, maxChars: number, hint: string): string {
  if (text.length <= maxChars) return text
  return `${text.slice(0, maxChars)}\n… [output truncated at ${maxChars} characters — ${hint}]`
}
