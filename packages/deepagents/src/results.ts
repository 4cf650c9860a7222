import { ToolFailure } from '@agentfs/agent-tools'
import { isAgentFsError } from '@agentfs/core'
import type { Stats } from '@agentfs/fs'
import type { FileInfo, FileOperationError } from 'deepagents'

/** The `{ error }` text of an operation that threw. */
export function errorText(error: unknown, parameters: Record<string, unknown>): string {
  if (error instanceof ToolFailure) return error.message
  const path = String(parameters.filePath ?? parameters.path ?? '')
  if (isAgentFsError(error)) {
    const code = (error as { code: string }).code
    if (code === 'ENOENT') return `Error: '${path}' not found`
    if (code === 'EISDIR') return `Error: '${path}' is a directory`
    return `Error: ${code} on '${path}': ${error.message.replace(/ '[^']*'/g, '')}`
  }
  return `Error: ${error instanceof Error ? error.message : String(error)}`
}

/** The protocol's error code of a failed upload or download. */
export function operationError(error: unknown): FileOperationError {
  const code = (error as { code?: string }).code
  if (code === 'ENOENT') return 'file_not_found'
  if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') return 'permission_denied'
  if (code === 'EISDIR') return 'is_directory'
  return 'invalid_path'
}

/** What the audit log keeps of a result: sizes and counts instead of file contents. */
export function summary(result: object): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(result)) {
    if (value instanceof Uint8Array) out[key] = { bytes: value.byteLength }
    else if (typeof value === 'string' && value.length > 4096) out[key] = { chars: value.length }
    else if (Array.isArray(value)) out[key] = { count: value.length }
    else if (key === 'content' || key === 'data') out[key] = { omitted: true }
    else out[key] = value
  }
  return out
}

/** A match as a sandbox's glob gives it: `/` + the path below the searched directory. */
export function relativeInfo(dir: string, full: string, st: Stats): FileInfo {
  const path = `/${full.slice(dir === '/' ? 1 : dir.length + 1)}`
  return st.isDirectory()
    ? { path, is_dir: true, size: 0, modified_at: st.mtime.toISOString() }
    : { path, is_dir: false, size: st.size, modified_at: st.mtime.toISOString() }
}
