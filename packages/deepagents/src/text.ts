import { extname } from 'node:path'
import { applyMatches, findMatches } from '@agentfs/agent-tools'

/** Binary types by extension, as deepagents' backends decide them; everything else is text. */
const BINARY: Record<string, string> = {
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.heic': 'image/heic',
  '.heif': 'image/heif',
  '.mp3': 'audio/mpeg',
  '.wav': 'audio/wav',
  '.aiff': 'audio/aiff',
  '.aac': 'audio/aac',
  '.ogg': 'audio/ogg',
  '.flac': 'audio/flac',
  '.mp4': 'video/mp4',
  '.webm': 'video/webm',
  '.mpeg': 'video/mpeg',
  '.mov': 'video/quicktime',
  '.avi': 'video/x-msvideo',
  '.flv': 'video/x-flv',
  '.mpg': 'video/mpeg',
  '.wmv': 'video/x-ms-wmv',
  '.3gpp': 'video/3gpp',
  '.pdf': 'application/pdf',
  '.ppt': 'application/vnd.ms-powerpoint',
  '.pptx': 'application/vnd.openxmlformats-officedocument.presentationml.presentation',
}

const TEXT: Record<string, string> = {
  '.md': 'text/markdown',
  '.markdown': 'text/markdown',
  '.html': 'text/html',
  '.htm': 'text/html',
  '.css': 'text/css',
  '.csv': 'text/csv',
  '.xml': 'text/xml',
  '.json': 'application/json',
  '.js': 'application/javascript',
  '.mjs': 'application/javascript',
  '.cjs': 'application/javascript',
  '.svg': 'image/svg+xml',
}

/** The MIME type of a path by its extension, and whether deepagents reads it as text. */
export function mimeTypeOf(path: string): { type: string; text: boolean } {
  const ext = extname(path).toLowerCase()
  const binary = BINARY[ext]
  if (binary) return { type: binary, text: false }
  return { type: TEXT[ext] ?? 'text/plain', text: true }
}

/**
 * The protocol's string replacement: `old` must occur once (or `replaceAll`); an empty file
 * takes `new` for an empty `old`. Returns the new content and the count, or the error text.
 */
export function replaceString(
  content: string,
  oldString: string,
  newString: string,
  replaceAll: boolean,
): [string, number] | string {
  if (content === '' && oldString === '') return [newString, 0]
  if (oldString === '') return 'Error: oldString cannot be empty when file has content'
  const occurrences = content.split(oldString).length - 1
  if (occurrences === 0) {
    // Not there byte for byte: the tolerance ladder of the AgentFS tools (line endings,
    // trailing whitespace, tabs vs spaces, look-alike characters), a unique match only.
    const found = findMatches(content, oldString, newString)
    if (found.matches.length === 0) return `Error: String not found in file: '${oldString}'`
    if (found.matches.length > 1 && !replaceAll)
      return `Error: String '${oldString}' has multiple occurrences (appears ${found.matches.length} times) in file. Use replace_all=True to replace all instances, or provide a more specific string with surrounding context.`
    return [applyMatches(content, found), found.matches.length]
  }
  if (occurrences > 1 && !replaceAll)
    return `Error: String '${oldString}' has multiple occurrences (appears ${occurrences} times) in file. Use replace_all=True to replace all instances, or provide a more specific string with surrounding context.`
  return [content.split(oldString).join(newString), occurrences]
}
