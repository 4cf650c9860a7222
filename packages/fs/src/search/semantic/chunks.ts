/** A run of a file's lines embedded as one vector. */
export interface TextChunk {
  /** 1-based, inclusive. */
  readonly startLine: number
  readonly endLine: number
  readonly text: string
}

/** Characters per chunk, at most (a longer line is cut into pieces of this size). */
export const CHUNK_CHARS = 1500
/** Chunks per file, at most: the rest of a longer file is not embedded. */
export const MAX_CHUNKS = 1000

/**
 * A text cut into chunks of whole lines of at most {@link CHUNK_CHARS} characters (a longer line
 * in pieces), at most {@link MAX_CHUNKS}. Blank chunks are left out.
 */
export function chunkText(text: string, chars = CHUNK_CHARS, max = MAX_CHUNKS): TextChunk[] {
  const out: TextChunk[] = []
  const lines = text.split('\n')
  let buffer: string | undefined
  let start = 1
  const push = (endLine: number) => {
    if (buffer !== undefined && buffer.trim().length > 0 && out.length < max)
      out.push({ startLine: start, endLine, text: buffer })
    buffer = undefined
  }
  for (let i = 0; i < lines.length && out.length < max; i++) {
    const line = lines[i]!
    const lineNo = i + 1
    if (line.length > chars) {
      push(lineNo - 1)
      for (let at = 0; at < line.length && out.length < max; at += chars) {
        start = lineNo
        buffer = line.slice(at, at + chars)
        push(lineNo)
      }
      continue
    }
    if (buffer !== undefined && buffer.length + 1 + line.length > chars) push(lineNo - 1)
    if (buffer === undefined) {
      buffer = line
      start = lineNo
    } else buffer = `${buffer}\n${line}`
  }
  push(lines.length)
  return out
}
