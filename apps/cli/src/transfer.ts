import { createReadStream } from 'node:fs'
import * as fsp from 'node:fs/promises'
import { join, relative, sep } from 'node:path'
import { pipeline } from 'node:stream/promises'
import { badEntryName, corruptError } from '@agentfs/core'
import type { Dirent, FileSystem } from '@agentfs/fs'
import { HostFileSystem, SPECIAL_BITS, specialBitNames } from '@agentfs/overlay'
import { SingleBar } from 'cli-progress'

/** Counts shown while copying. */
interface Progress {
  tick(bytes: number): void
  stop(): void
}

/** A progress bar on a terminal (files, bytes, rate); plain lines otherwise. */
function progress(
  total: number,
  label: string,
  out: NodeJS.WriteStream = process.stderr,
): Progress {
  const started = Date.now()
  let files = 0
  let bytes = 0
  const rate = () =>
    `${(bytes / 1048576 / Math.max((Date.now() - started) / 1000, 0.001)).toFixed(1)} MiB/s`
  if (out.isTTY) {
    const bar = new SingleBar({
      format: `${label} [{bar}] {value}/{total} files | {mib} MiB | {rate}`,
      stream: out,
      hideCursor: true,
    })
    bar.start(total, 0, { mib: '0.0', rate: '-' })
    return {
      tick(n) {
        files++
        bytes += n
        bar.update(files, { mib: (bytes / 1048576).toFixed(1), rate: rate() })
      },
      stop: () => bar.stop(),
    }
  }
  return {
    tick(n) {
      files++
      bytes += n
      if (files % 1000 === 0) out.write(`${label}: ${files}/${total} files, ${bytes} bytes\n`)
    },
    stop: () => out.write(`${label}: ${files} entries, ${bytes} bytes, ${rate()}\n`),
  }
}

const seconds = (ns: bigint) => Number(ns) / 1e9

/** A filesystem that can run several changes as one transaction (AgentFS, an overlay). */
interface Transactional {
  transaction<T>(fn: (fs: FileSystem) => Promise<T>): Promise<T>
}

const transactional = (fs: FileSystem): fs is FileSystem & Transactional =>
  typeof (fs as Partial<Transactional>).transaction === 'function'

/**
 * Copies a host directory into the filesystem at `/` (modes, times and symlinks kept), as one
 * transaction: all of it or nothing. Entries that already exist are refused up front (nothing is
 * written) unless `force`, which replaces existing files and links and merges into existing
 * directories.
 */
export async function importTree(
  hostDir: string,
  fs: FileSystem,
  options: { force?: boolean } = {},
): Promise<{ entries: number; bytes: number }> {
  const entries = await fsp.readdir(hostDir, { recursive: true, withFileTypes: true })
  entries.sort((a, b) => (join(a.parentPath, a.name) < join(b.parentPath, b.name) ? -1 : 1))
  const pathOf = (entry: (typeof entries)[number]) =>
    `/${relative(hostDir, join(entry.parentPath, entry.name)).split(sep).join('/')}`
  const clashes: string[] = []
  for (const entry of entries) {
    const existing = await fs.lstat(pathOf(entry)).catch(() => undefined)
    if (!existing) continue
    if (entry.isDirectory() && existing.isDirectory()) continue
    if (!options.force || existing.isDirectory() || entry.isDirectory()) clashes.push(pathOf(entry))
  }
  if (clashes.length > 0)
    throw new Error(
      `${clashes.length} entr${clashes.length === 1 ? 'y' : 'ies'} already exist (${clashes.slice(0, 3).join(', ')}${clashes.length > 3 ? ', …' : ''}); nothing was imported. ${options.force ? 'A file and a directory cannot replace each other; remove them first' : 'Pass --force to replace existing files and links'}`,
    )
  const run = (target: FileSystem) => copyIn(target, entries, pathOf, options.force === true)
  return transactional(fs) ? fs.transaction(run) : run(fs)
}

async function copyIn(
  fs: FileSystem,
  entries: import('node:fs').Dirent[],
  pathOf: (entry: import('node:fs').Dirent) => string,
  force: boolean,
): Promise<{ entries: number; bytes: number }> {
  const bar = progress(entries.length, 'import')
  let bytes = 0
  const directories: Array<[string, { atimeNs: bigint; mtimeNs: bigint }]> = []
  try {
    for (const entry of entries) {
      const host = join(entry.parentPath, entry.name)
      const path = pathOf(entry)
      const stats = await fsp.lstat(host, { bigint: true })
      const mode = Number(stats.mode) & 0o7777
      if (force && !entry.isDirectory()) await fs.rm(path, { force: true })
      if (entry.isDirectory()) {
        await fs.mkdir(path, { recursive: true, mode })
        await fs.chmod(path, mode)
        directories.push([path, stats])
      } else if (entry.isSymbolicLink()) {
        await fs.symlink(await fsp.readlink(host), path)
        await fs.lutimes(path, seconds(stats.atimeNs), seconds(stats.mtimeNs))
      } else if (entry.isFile()) {
        await pipeline(createReadStream(host), fs.createWriteStream(path, { mode }))
        await fs.chmod(path, mode)
        await fs.utimes(path, seconds(stats.atimeNs), seconds(stats.mtimeNs))
        bytes += Number(stats.size)
      }
      bar.tick(entry.isFile() ? Number(stats.size) : 0)
    }
    // Directory times last: creating their children moved them.
    for (const [path, stats] of directories.reverse())
      await fs.utimes(path, seconds(stats.atimeNs), seconds(stats.mtimeNs))
  } finally {
    bar.stop()
  }
  return { entries: entries.length, bytes }
}

/** Lines telling what an export or commit left out: special bits dropped, entries skipped. */
export function leftOutLines(
  droppedBits: readonly { path: string; bits: readonly string[] }[],
  skipped: readonly { path: string; reason: string }[],
  flag: string,
): string[] {
  return [
    ...droppedBits.map(
      (d) => `dropped ${d.bits.join(', ')} from ${d.path} (pass ${flag} to keep such bits)`,
    ),
    ...skipped.map((s) => `skipped ${s.path}: ${s.reason}`),
  ]
}

/**
 * Copies the filesystem into a host directory (modes, times and symlinks kept; setuid, setgid
 * and sticky bits dropped unless `keepSpecialBits`, as a commit does). Everything is
 * written through a no-follow {@link HostFileSystem} rooted at `hostDir`, and every name is
 * checked first: a crafted database (a dentry named `../x`, a link planted in `hostDir`) gets
 * a typed error, never a write outside `hostDir`.
 */
export async function exportTree(
  fs: FileSystem,
  hostDir: string,
  options: { force?: boolean; keepSpecialBits?: boolean } = {},
): Promise<{
  entries: number
  bytes: number
  droppedBits: { path: string; bits: string[] }[]
  skipped: string[]
}> {
  await fsp.mkdir(hostDir, { recursive: true })
  const present = await fsp.readdir(hostDir)
  if (present.length > 0 && !options.force)
    throw new Error(
      `${hostDir} is not empty (${present.slice(0, 3).join(', ')}${present.length > 3 ? ', …' : ''}); nothing was exported. Pass --force to write over what is there`,
    )
  const out = new HostFileSystem({ root: hostDir, writable: true, noFollow: true })
  const entries = (await fs.readdir('/', { recursive: true, withFileTypes: true })) as Dirent[]
  for (const entry of entries) {
    const bad = badEntryName(entry.name)
    if (bad !== undefined)
      throw corruptError('export', entry.parentPath, `an entry name ${bad}; nothing was exported`)
  }
  const bar = progress(entries.length, 'export')
  let bytes = 0
  const directories: Array<[string, { atimeNs: bigint; mtimeNs: bigint }]> = []
  const droppedBits: { path: string; bits: string[] }[] = []
  const skipped: string[] = []
  try {
    for (const entry of entries) {
      const path = `${entry.parentPath === '/' ? '' : entry.parentPath}/${entry.name}`
      const stats = await fs.lstat(path)
      let mode = stats.mode & 0o7777
      if (!options.keepSpecialBits && mode & SPECIAL_BITS && !stats.isSymbolicLink()) {
        droppedBits.push({ path, bits: specialBitNames(mode) })
        mode &= ~SPECIAL_BITS
      }
      if (!stats.isDirectory() && !stats.isSymbolicLink() && !stats.isFile()) skipped.push(path)
      if (stats.isDirectory()) {
        await out.mkdir(path, { recursive: true })
        await out.chmod(path, mode)
        directories.push([path, stats])
      } else if (stats.isSymbolicLink()) {
        if (options.force) await out.rm(path, { force: true })
        await out.symlink(await fs.readlink(path), path)
        await out.lutimes(path, seconds(stats.atimeNs), seconds(stats.mtimeNs))
      } else if (stats.isFile()) {
        await pipeline(fs.createReadStream(path), out.createWriteStream(path, { mode }))
        await out.chmod(path, mode)
        await out.utimes(path, seconds(stats.atimeNs), seconds(stats.mtimeNs))
        bytes += stats.size
      }
      bar.tick(stats.isFile() ? stats.size : 0)
    }
    for (const [path, stats] of directories.reverse())
      await out.utimes(path, seconds(stats.atimeNs), seconds(stats.mtimeNs))
  } finally {
    bar.stop()
  }
  return { entries: entries.length, bytes, droppedBits, skipped }
}
