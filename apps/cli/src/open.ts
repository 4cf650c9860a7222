import { existsSync } from 'node:fs'
import { resolve } from 'node:path'
import { countBadNames } from '@agentfs/core'
import { createFileSystem, type FileSystem, type FileSystemOptions } from '@agentfs/fs'
import { openOverlay, readOverlayBase } from '@agentfs/overlay'
import { AgentFS } from '@agentfs/sdk'

/** Like the reference CLI: a bare id means `.agentfs/<id>.db`; anything else is a path. */
export function databasePath(target: string): string {
  return /^[a-zA-Z0-9_-]+$/.test(target) ? resolve('.agentfs', `${target}.db`) : resolve(target)
}

/** Opens an existing database (never creates one by mistake). */
export async function openExisting(target: string): Promise<AgentFS> {
  const path = databasePath(target)
  if (!existsSync(path))
    throw new Error(`no database at ${path}; create it with "agentfs init ${target}"`)
  const agent = await AgentFS.open({ path })
  // A crafted database is flagged as soon as it is opened; walkers and exports refuse it too.
  const bad = await countBadNames(agent.db).catch(() => 0)
  if (bad > 0)
    process.stderr.write(
      `agentfs: warning: ${path} has ${bad} entr${bad === 1 ? 'y' : 'ies'} whose name cannot be a path component (damaged or crafted); run "agentfs fsck ${target}"\n`,
    )
  return agent
}

/**
 * The filesystem to show: the overlay view when the database holds an overlay. `fs` options
 * (umask, owner) apply to what the view creates.
 */
export async function viewOf(agent: AgentFS, fs?: FileSystemOptions): Promise<FileSystem> {
  if (await readOverlayBase(agent.db)) return openOverlay(agent.db, fs ? { fs } : {})
  return fs ? createFileSystem(agent.db, fs) : agent.fs
}

/**
 * Filesystem options for a kernel-facing view (FUSE): the kernel has already applied the
 * caller's umask, and new files belong to the user running the mount.
 */
export const kernelFacing = (): FileSystemOptions => ({
  umask: 0,
  uid: process.getuid?.() ?? 0,
  gid: process.getgid?.() ?? 0,
})
