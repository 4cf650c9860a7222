import { isAgentFsError } from '@agentfs/core'
import type { ToolOutput } from './types.js'

/** A failure a tool reports to the model as a value (thrown inside handlers, caught once). */
export class ToolFailure extends Error {
  readonly code: string
  /** Structured extras for programs (a merge conflict's regions, the current version). */
  readonly data: Record<string, unknown> | undefined
  constructor(code: string, message: string, data?: Record<string, unknown>) {
    super(message)
    this.code = code
    this.data = data
  }
}

const ADVICE: Record<string, string> = {
  ENOENT: 'Check the path with list_directory or glob.',
  EISDIR: 'It is a directory: use list_directory to see what it contains.',
  ENOTDIR: 'A part of the path is a file, not a directory.',
  EEXIST: 'Something already exists there; choose another path or delete it first.',
  ENOTEMPTY: 'The directory is not empty; delete it with recursive: true if that is intended.',
  EACCES: 'That path is not accessible.',
  EROFS: 'The filesystem is read-only here.',
  ELOOP: 'Symbolic links form a loop.',
  EINVAL: 'The request is invalid for this path.',
}

/** Turns anything a handler threw into a model-readable error output. */
export function failureOutput(error: unknown, display: (path: string) => string): ToolOutput {
  if (error instanceof ToolFailure)
    return {
      text: error.message,
      isError: true,
      code: error.code,
      ...(error.data ? { data: error.data } : {}),
    }
  if (isAgentFsError(error)) {
    const code = (error as { code: string }).code
    let message = error.message
    const path = (error as { path?: string }).path
    if (typeof path === 'string') message = message.replaceAll(`'${path}'`, `'${display(path)}'`)
    const advice = ADVICE[code]
    return { text: `Error: ${message}${advice ? `\n${advice}` : ''}`, isError: true, code }
  }
  return {
    text: `Error: ${error instanceof Error ? error.message : String(error)}`,
    isError: true,
    code: 'UNKNOWN',
  }
}
