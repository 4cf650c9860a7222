import { constants, type Dirent as NodeDirent } from 'node:fs'
import * as fsp from 'node:fs/promises'
import { badEntryName, fsError, joinPath, normalizePath } from '@agentfs/core'
import { Dirent } from '@agentfs/fs'
import {
  HAS_PROC_FD,
  type HostWalker,
  O_CREAT,
  O_EXCL,
  O_RDONLY,
  O_TRUNC,
  O_WRONLY,
  openAt,
  openDir,
  PROC_FD,
} from './host-walk.js'

/** Deepest directory nesting walked by `rm -r` and recursive `readdir`. */
const MAX_DEPTH = 2048

const modeOf = (entry: NodeDirent): number =>
  entry.isDirectory()
    ? 0o040000
    : entry.isSymbolicLink()
      ? 0o120000
      : entry.isFile()
        ? 0o100000
        : 0o010000

/** Empties and removes the host directory at `at`, never following a link inside it. */
export async function removeTree(at: string, path: string, depth = 0): Promise<void> {
  if (depth > MAX_DEPTH) throw fsError('ELOOP', 'rm', path)
  const handle = HAS_PROC_FD ? await openDir(at, 'rm', path) : undefined
  const dir = handle ? `${PROC_FD}/${handle.fd}` : at
  try {
    for (const entry of await fsp.readdir(dir, { withFileTypes: true })) {
      const child = `${dir}/${entry.name}`
      if (entry.isDirectory()) await removeTree(child, path, depth + 1)
      else await fsp.unlink(child)
    }
  } finally {
    await handle?.close()
  }
  await fsp.rmdir(at)
}

/**
 * Lists the host directory at `at` (inside the filesystem: `logical`) into `out`, descending
 * without links when `recursive`. `held`: `at` already names a descriptor the caller holds open.
 */
export async function listTree(
  at: string,
  logical: string,
  recursive: boolean,
  out: Dirent[],
  path: string,
  depth = 0,
  held = false,
): Promise<void> {
  if (depth > MAX_DEPTH) throw fsError('ELOOP', 'scandir', path)
  const handle = HAS_PROC_FD && !held ? await openDir(at, 'scandir', path) : undefined
  const dir = handle ? `${PROC_FD}/${handle.fd}` : at
  try {
    const entries = (await fsp.readdir(dir, { withFileTypes: true })) as NodeDirent[]
    for (const entry of entries) {
      if (badEntryName(entry.name) !== undefined) continue
      out.push(new Dirent(entry.name, logical, modeOf(entry)))
      if (recursive && entry.isDirectory())
        await listTree(
          `${dir}/${entry.name}`,
          joinPath(logical, entry.name),
          true,
          out,
          path,
          depth + 1,
        )
    }
  } finally {
    await handle?.close()
  }
}

/** `mkdir -p` in a host directory: each missing directory made in turn, through links that stay inside. */
export async function mkdirp(
  walker: HostWalker,
  path: string,
  mode: number,
): Promise<string | undefined> {
  const normal = normalizePath(path, 'mkdir')
  const parts = normal === '/' ? [] : normal.slice(1).split('/')
  let first: string | undefined
  for (let i = 1; i <= parts.length; i++) {
    const prefix = `/${parts.slice(0, i).join('/')}`
    await walker.at(prefix, 'mkdir', { follow: true, allowMissing: true }, async (r) => {
      if (r.stats) {
        if (!r.stats.isDirectory())
          throw fsError(i === parts.length ? 'EEXIST' : 'ENOTDIR', 'mkdir', path)
        return
      }
      await fsp.mkdir(r.target, { mode })
      first ??= prefix
    })
  }
  return first
}

/** Copies a host file's bytes and permissions to `dest` (created or truncated), opened without following links. */
export async function copyHostFile(
  walker: HostWalker,
  src: string,
  dest: string,
  mode: number,
): Promise<void> {
  await walker.at(
    src,
    'copyfile',
    { follow: true },
    async (a) => {
      if (a.stats?.isDirectory()) throw fsError('EISDIR', 'copyfile', src)
      const input = await openAt(a, O_RDONLY)
      try {
        const perm = (await input.stat()).mode & 0o7777
        const exclusive = mode & constants.COPYFILE_EXCL ? O_EXCL : 0
        await walker.at(dest, 'copyfile', { follow: true, allowMissing: true }, async (b) => {
          const output = await openAt(b, O_WRONLY | O_CREAT | O_TRUNC | exclusive, perm)
          try {
            const buffer = Buffer.allocUnsafe(1 << 16)
            for (;;) {
              const { bytesRead } = await input.read(buffer, 0, buffer.length, null)
              if (bytesRead === 0) break
              await output.write(buffer, 0, bytesRead)
            }
          } finally {
            await output.close()
          }
        })
      } finally {
        await input.close()
      }
    },
    dest,
  )
}
