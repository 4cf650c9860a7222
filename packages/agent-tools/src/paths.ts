import {
  isFsError,
  isWithin,
  joinPath,
  normalizePath,
  type PathSteps,
  parentPath,
  parsePath,
  resolvePath,
} from '@agentfs/core'
import type { FileSystem, FsPolicy, Stats } from '@agentfs/fs'
import { ToolFailure } from './failure.js'
import type { PathPolicy } from './types.js'

/** Where names lead on any {@link FileSystem}, from `lstat` and `readlink` alone; a directory is its path. */
function fileSystemSteps(fs: FileSystem): PathSteps<string, Stats | undefined> {
  return {
    root: () => '/',
    async step(dir, names) {
      const entry = await fs.lstat(joinPath(dir, names[0]!)).catch((error: unknown) => {
        if (isFsError(error) || (error as { code?: unknown }).code !== undefined) return undefined
        throw error
      })
      return { found: entry ? 1 : 0, entry, dir }
    },
    isDirectory: (entry) => entry?.isDirectory() === true,
    isSymbolicLink: (entry) => entry?.isSymbolicLink() === true,
    readlink: (dir, name) => fs.readlink(joinPath(dir, name)),
    enter: (dir, name) => joinPath(dir, name),
    parent: (dir) => parentPath(dir),
  }
}

/**
 * Where `path` lands on `fs`: every existing component resolved through symlinks (the shared
 * resolver: absolute targets from `/`, relative ones from the link's directory, `..`
 * physically, ELOOP after 40 links), the missing rest appended. So a dangling link or a link in
 * the middle of a path that does not exist yet is judged where it leads.
 */
export async function landing(fs: FileSystem, path: string): Promise<string> {
  const r = await resolvePath(fileSystemSteps(fs), parsePath(normalizePath(path), 'open'), {
    followLast: true,
    syscall: 'open',
    partial: true,
  })
  if (r.name === undefined) return r.dir
  return normalizePath(`${joinPath(r.dir, r.name)}/${r.rest.join('/')}`)
}

/** A filesystem that can narrow itself by a policy inside its own transactions (SqlFileSystem). */
interface Restrictable {
  restrict(policy: FsPolicy): FileSystem
}

const canRestrict = (fs: FileSystem): fs is FileSystem & Restrictable =>
  typeof (fs as Partial<Restrictable>).restrict === 'function'

/**
 * The model's paths: absolute POSIX paths, relative ones taken from `/`, `..` never above `/`.
 * With `root`, the model's `/` is that directory; with `allowedRoots`, anything else is refused —
 * judged where the path really lands, through symlinks (dangling ones too) and for paths that
 * do not exist yet. On a filesystem that enforces policies itself (SqlFileSystem), {@link confine}
 * also narrows it to the roots, so every check runs again inside the change's transaction.
 */
export function createPathPolicy(options: {
  root?: string
  allowedRoots?: readonly string[]
  readOnly?: boolean
}): PathPolicy & { confine(fs: FileSystem): FileSystem } {
  const root = options.root === undefined ? '/' : normalizePath(options.root)
  const allowed = (options.allowedRoots ?? ['/']).map((p) => normalizePath(p))
  const fsRoots = allowed.map((a) => (root === '/' ? a : joinRoot(root, a)))
  const inRoot = (fsPath: string) => isWithin(fsPath, root)
  const inAllowed = (fsPath: string) => fsRoots.some((a) => isWithin(fsPath, a))
  const display = (fsPath: string) =>
    root === '/' ? fsPath : fsPath === root ? '/' : fsPath.slice(root.length)
  const refuse = (modelPath: string) =>
    new ToolFailure(
      'EACCES',
      `Error: ${modelPath} is outside the allowed directories (${allowed.join(', ')}). Use a path inside them.`,
    )
  const confined = root !== '/' || options.allowedRoots !== undefined
  return {
    display,
    async resolve(modelPath: string, fs: FileSystem): Promise<string> {
      if (typeof modelPath !== 'string' || modelPath.length === 0)
        throw new ToolFailure('EINVAL', 'Error: path must be a non-empty string.')
      if (climbsAboveRoot(modelPath))
        throw new ToolFailure(
          'EACCES',
          `Error: path traversal: ${JSON.stringify(modelPath)} climbs above / with "..". Use a path inside /.`,
        )
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
      if (confined) {
        // A symlink may lead elsewhere, also one that dangles or sits above a missing name.
        const real = await landing(fs, fsPath).catch(() => undefined)
        if (real === undefined || !inRoot(real) || !inAllowed(real)) throw refuse(modelPath)
      }
      return fsPath
    },
    async visible(fsPath: string, fs: FileSystem): Promise<boolean> {
      if (!inRoot(fsPath) || !inAllowed(fsPath)) return false
      if (!confined) return true
      const slash = fsPath.lastIndexOf('/')
      const parent = await landing(fs, fsPath.slice(0, slash) || '/').catch(() => undefined)
      if (parent === undefined) return false
      const real = `${parent === '/' ? '' : parent}${fsPath.slice(slash)}`
      return inRoot(real) && inAllowed(real)
    },
    confine(fs: FileSystem): FileSystem {
      if (!confined || !canRestrict(fs)) return fs
      const globs = fsRoots.flatMap((r) => (r === '/' ? ['/', '/**'] : [r, `${r}/**`]))
      return fs.restrict({ read: globs, write: options.readOnly ? [] : globs })
    },
  }
}

/**
 * Whether `..` in a model's path climbs above its `/` (read from `/` for a relative path):
 * refused as a traversal attempt rather than clamped, so `/../x` never quietly means `/x`.
 */
export function climbsAboveRoot(path: string): boolean {
  let depth = 0
  for (const name of path.split('/')) {
    if (name === '..') depth--
    else if (name !== '' && name !== '.') depth++
    if (depth < 0) return true
  }
  return false
}

function joinRoot(root: string, path: string): string {
  if (root === '/') return path
  return path === '/' ? root : `${root}${path}`
}
