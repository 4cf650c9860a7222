import type { AgentDatabase } from '@agentfs/core'
import { type FsPolicy, policyReadable, type SqlFileSystem } from '@agentfs/fs'
import type { ChangeLog, History } from '@agentfs/history'
import type { KvStore } from '@agentfs/kv'
import type { OpenOverlayOptions } from '@agentfs/overlay'
import type { ToolCalls } from '@agentfs/tool-calls'

/** What the inspector reads: an `AgentFS` from `@agentfs/sdk` has all of it. */
export interface InspectedAgent {
  readonly db: AgentDatabase
  readonly fs: SqlFileSystem
  readonly kv: KvStore
  readonly tools: ToolCalls
  readonly changes: ChangeLog
  readonly history: History
  readonly path?: string | undefined
}

/** Options of `createInspectorApp` and `serveInspector`. */
export interface InspectorAppOptions {
  /**
   * The access token every request must carry (a cookie set by opening the printed URL, or
   * `Authorization: Bearer TOKEN`). Default: 32 random bytes, printed in the URL.
   */
  readonly token?: string
  /** Allow the few changes the inspector can make (taking a snapshot). Default: read-only. */
  readonly allowWrites?: boolean
  /**
   * Show only what this path policy lets be read: files, histories, diffs and the change feed's
   * rows of other paths are hidden (403 for a path asked for by name).
   */
  readonly policy?: FsPolicy
  /** How to open an overlay's or branch's base for the Branch view (the CLI passes its own). */
  readonly openBase?: OpenOverlayOptions['openBase']
  /** Host names the server answers to besides 127.0.0.1 and localhost (see `--host`). */
  readonly hosts?: readonly string[]
}

/** What every endpoint works with. */
export interface Inspection {
  readonly agent: InspectedAgent
  /** The filesystem reads go through: the agent's, narrowed to the policy when given. */
  readonly fs: SqlFileSystem
  /** Whether the policy lets `path` be read (always, without one). */
  readonly readable: (path: string | null) => boolean
  readonly options: InspectorAppOptions
}

/** The inspection of `agent` under `options`. */
export function inspection(agent: InspectedAgent, options: InspectorAppOptions): Inspection {
  const check = options.policy ? policyReadable(options.policy) : undefined
  return {
    agent,
    fs: options.policy ? agent.fs.restrict(options.policy) : agent.fs,
    readable: (path) => !check || path === null || check(path),
    options,
  }
}
