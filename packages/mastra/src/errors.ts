import { isAgentFsError, isFsError, parentPath } from '@agentfs/core'
import type { FileSystem } from '@agentfs/fs'
import {
  DirectoryNotEmptyError,
  DirectoryNotFoundError,
  FileExistsError,
  FileNotFoundError,
  FilesystemError,
  IsDirectoryError,
  NotDirectoryError,
  PermissionError,
} from '@mastra/core/workspace'

export const missingAs =
  <T>(value: T) =>
  (error: unknown): T => {
    if (isFsError(error, 'ENOENT') || isFsError(error, 'ENOTDIR')) return value
    throw error
  }

export const parentOf = (path: string): string => {
  const slash = path.replace(/\/+$/, '').lastIndexOf('/')
  return slash <= 0 ? (path.startsWith('/') ? '/' : '.') : path.slice(0, slash)
}

/** Runs `fn`, turning AgentFS filesystem errors into Mastra's. */
export async function mapErrors<T>(
  path: string,
  operation: string,
  fn: () => Promise<T>,
): Promise<T> {
  try {
    return await fn()
  } catch (error) {
    throw mastraError(error, path, operation)
  }
}

export function mastraError(error: unknown, path: string, operation: string): unknown {
  if (error instanceof FilesystemError || !isAgentFsError(error)) return error
  const code = (error as { code: string }).code
  switch (code) {
    case 'ENOENT':
      return new FileNotFoundError(path)
    case 'EISDIR':
      return new IsDirectoryError(path)
    case 'ENOTDIR':
      return new NotDirectoryError(path)
    case 'EEXIST':
      return new FileExistsError(path)
    case 'ENOTEMPTY':
      return new DirectoryNotEmptyError(path)
    case 'EACCES':
    case 'EPERM':
    case 'EROFS':
      return new PermissionError(path, `${operation} (${code}: ${error.message})`)
    default:
      return new FilesystemError(error.message, code, path)
  }
}

/** The parent of a write (recursive: false) or a listed directory must exist and be one. */
export async function directoryOf(
  fs: FileSystem,
  path: string,
  p: string,
  self = false,
): Promise<void> {
  const dir = self ? p : parentPath(p)
  const shown = self ? path : parentOf(path)
  const st = await fs.stat(dir).catch((error: unknown) => {
    if (isFsError(error, 'ENOENT')) throw new DirectoryNotFoundError(shown)
    throw error
  })
  if (!st.isDirectory()) throw new NotDirectoryError(shown)
}
