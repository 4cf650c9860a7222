import { randomUUID } from 'node:crypto'
import { readFileSync, renameSync, writeFileSync } from 'node:fs'
import { AgentFsError } from '@agentfs/core'

/**
 * A whole-file write this client pushed: if it loses, it is merged with the winner (text) or
 * its inode is relinked as a copy.
 */
export interface PendingSwap {
  readonly ino: number
  readonly parent: number
  readonly name: string
  /** The entry's id (absent in state files written before merges). */
  readonly entry?: number
}

/** A kv write this client pushed, to tell after the pull whether another client's won. */
export interface PushedKv {
  readonly key: string
  readonly value: string
  readonly updatedAt: number
}

/**
 * What one client keeps about itself, beside its database and never synced (a synced
 * database has no local-only tables: rows a push skips vanish at the next pull).
 */
export interface ClientState {
  readonly version: 1
  readonly clientId: string
  readonly url: string
  slot?: number
  swaps: PendingSwap[]
  kv: PushedKv[]
  lastPushMs?: number
  lastPullMs?: number
}

/** The state file of the synced database at `path`. */
export const statePath = (path: string) => `${path}-agentfs-sync.json`

export function readState(path: string): ClientState | undefined {
  let text: string
  try {
    text = readFileSync(statePath(path), 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw error
  }
  let state: ClientState
  try {
    state = JSON.parse(text) as ClientState
  } catch (error) {
    throw new AgentFsError(
      'CORRUPT',
      `${statePath(path)} is not JSON; restore it, or delete it and the database to join again`,
      { cause: error },
    )
  }
  if (state.version !== 1 || typeof state.clientId !== 'string' || typeof state.url !== 'string')
    throw new AgentFsError(
      'CORRUPT',
      `${statePath(path)} is not an AgentFS sync state file; restore it, or delete it and the database to join again`,
    )
  state.swaps ??= []
  state.kv ??= []
  return state
}

export function newState(url: string): ClientState {
  return { version: 1, clientId: randomUUID(), url, swaps: [], kv: [] }
}

/** Writes the state atomically (a temporary file renamed over the old one). */
export function writeState(path: string, state: ClientState): void {
  const file = statePath(path)
  const temporary = `${file}.${process.pid}.tmp`
  writeFileSync(temporary, `${JSON.stringify(state, null, 2)}\n`)
  renameSync(temporary, file)
}
