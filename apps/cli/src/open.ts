import { existsSync } from 'node:fs'
import { resolve } from 'node:path'
import type { FileSystem } from '@agentfs/fs'
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
  return AgentFS.open({ path })
}

/** The filesystem to show: the overlay view when the database holds an overlay. */
export async function viewOf(agent: AgentFS): Promise<FileSystem> {
  return (await readOverlayBase(agent.db)) ? openOverlay(agent.db) : agent.fs
}
