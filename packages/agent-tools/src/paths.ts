import { isWithin, normalizePath } from '@agentfs/core'
import type { FileSystem } from '@agentfs/fs'
import { ToolFailure } from './failure.js'
import type { PathPolicy } from './types.js'

/**
 * The model's paths: absolute POSIX paths, relative ones taken from `/`, `..` never above `/`.
 * With `root`, the model's `/` is that directory; with `allowedRoots`, anything else is refused —
 * also when a symlink would lead out (checked on the real path of what exists).
 */
export function createPathPolicy(options: {
  root?: string
  allowedRoots?: readonly string[]
}): PathPolicy {
  const root = options.root === undefined ? '/' : normalizePath(options.root)
  const allowed = (options.allowedRoots ?? ['/']).map((p) => normalizePath(p))
  const inRoot = (fsPath: string) => isWithin(fsPath, root)
  const inAllowed = (fsPath: string) =>
    allowed.some((a) => isWithin(fsPath, root === '/' ? a : joinRoot(root, a)))
  const display = (fsPath: string) =>
    root === '/' ? fsPath : fsPath === root ? '/' : fsPath.slice(root.length)
  const refuse = (modelPath: string) =>
    new ToolFailure(
      'EACCES',
      `Error: ${modelPath} is outside the allowed directories (${allowed.join(', ')}). Use a path inside them.`,
    )
  return {
    display,
    async resolve(modelPath: string, fs: FileSystem): Promise<string> {
      if (typeof modelPath !== 'string' || modelPath.length === 0)
        throw new ToolFailure('EINVAL', 'Error: path must be a non-empty string.')
      let normal: string
      try {
        normal = normalizePath(modelPath.startsWith('/') ? modelPath : `/${modelPath}`)
      } catch (error) {
        throw new ToolFailure(
          (error as { code?: string }).code ?? 'EINVAL',
          `Error: invalid path ${JSON.stringify(modelPath)}: ${(error as Error).message}`,
        )
      }
      const fsPath = joinRoot(root, normal)
      if (!inRoot(fsPath) || !inAllowed(fsPath)) throw refuse(modelPath)
      // A symlink may point elsewhere: check where existing paths really lead.
      const real = await fs.realpath(fsPath).catch(() => undefined)
      if (real !== undefined && (!inRoot(real) || !inAllowed(real))) throw refuse(modelPath)
      return fsPath
    },
  }
}

function joinRoot(root: string, path: string): string {
  if (root === '/') return path
  return path === '/' ? root : `${root}${path}`
}
