import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { MessageChannel, Worker } from 'node:worker_threads'
import {
  type NodeFs,
  portSyncBridge,
  type SqlFileSystem,
  SYNC_SHARED_BYTES,
  toNodeFs,
} from '@agentfs/fs'
import type { AgentFSOptions } from './agentfs.js'

/** What the worker may be given: the open options that cross threads (no driver, clock, ids). */
function workerOptions(path: string, options: AgentFSOptions): AgentFSOptions {
  // Functions cannot cross threads: the embedder and onWarning stay with the agent.
  const {
    driver: _driver,
    clock: _clock,
    ids: _ids,
    id: _id,
    dir: _dir,
    embed: _embed,
    onWarning: _onWarning,
    ...rest
  } = options
  return { ...rest, path }
}

/** The built worker: beside this module, or (running from source, in tests) the package's build. */
function workerFile(): URL {
  const beside = new URL('./sync-worker.js', import.meta.url)
  if (existsSync(fileURLToPath(beside))) return beside
  return new URL('../dist/sync-worker.js', import.meta.url)
}

/** Options taking a value in the next argument, that a worker may be given. */
const WITH_VALUE = new Set([
  '--conditions',
  '-C',
  '--import',
  '--require',
  '-r',
  '--loader',
  '--experimental-loader',
])
/** The source condition given inline (`--conditions=@agentfs/source`, `-C=…`). */
const INLINE_SOURCE = /^(--conditions|-C)=@agentfs\/source$/
/** Flags a worker may be given (Node refuses per-process ones such as --stack-trace-limit). */
const WORKER_FLAG =
  /^--(conditions|import|require|loader|experimental-loader|enable-source-maps|no-warnings|experimental-[a-z-]+)(=|$)|^-C=|^-r=/

/**
 * The worker's `execArgv`: inherited as it is (undefined), unless it resolves workspace
 * packages to their TypeScript source (`--conditions @agentfs/source`, in tests), which the
 * worker cannot load: then the worker-safe flags without that condition.
 */
function workerExecArgv(args: readonly string[]): string[] | undefined {
  const isSource = (a: string | undefined) => a === '@agentfs/source'
  if (
    !args.some(
      (a, i) =>
        isSource(a) || INLINE_SOURCE.test(a) || (isSource(args[i + 1]) && WITH_VALUE.has(a)),
    )
  )
    return undefined
  const out: string[] = []
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    if (WITH_VALUE.has(arg)) {
      const value = args[++i]
      if (value !== undefined && !isSource(value)) out.push(arg, value)
      continue
    }
    if (INLINE_SOURCE.test(arg)) continue
    if (WORKER_FLAG.test(arg)) out.push(arg)
  }
  return out
}

/** A `node:fs`-shaped view of an agent, with its `…Sync` calls on a worker thread. */
export interface SyncNodeFs {
  readonly nodeFs: NodeFs
  /** Stops the worker (and its connection). */
  close(): Promise<void>
}

/**
 * `toNodeFs(fs)` with synchronous calls: a worker thread opens the same database file with the
 * same options (so the same policy) and runs each `…Sync` call while the caller waits. Without a
 * file (in memory, or a caller's driver) the `…Sync` calls fail with ENOSYS saying why.
 */
export function syncNodeFs(
  fs: SqlFileSystem,
  path: string | undefined,
  options: AgentFSOptions,
  bridge: {
    /** True while the caller's own database holds a transaction open. */
    readonly transactionOpen: () => boolean
    readonly timeoutMs?: number
  } = { transactionOpen: () => false },
): SyncNodeFs {
  if (path === undefined || path === ':memory:')
    return {
      nodeFs: toNodeFs(fs, {
        noSync:
          path === undefined
            ? 'this agent was opened with its own driver; open it by path or id for the …Sync calls'
            : 'an in-memory database has no file a worker thread could open; open one by path or id',
      }),
      close: async () => {},
    }
  const execArgv = workerExecArgv(process.execArgv)
  const shared = new SharedArrayBuffer(SYNC_SHARED_BYTES)
  const { port1, port2 } = new MessageChannel()
  const worker = new Worker(workerFile(), {
    workerData: { port: port2, shared, options: workerOptions(path, options) },
    transferList: [port2],
    // The worker runs the built packages: a source-resolving condition (tests) is not passed on.
    ...(execArgv === undefined ? {} : { execArgv }),
  })
  worker.unref()
  port1.unref()
  return {
    nodeFs: toNodeFs(fs, {
      sync: portSyncBridge(port1, shared, {
        ...(bridge.timeoutMs === undefined ? {} : { timeoutMs: bridge.timeoutMs }),
        // The worker's connection would wait for this one's write lock while this thread, the
        // only one that can release it, waits for the worker.
        blocked: () =>
          bridge.transactionOpen()
            ? 'this agent has a transaction open on the same database, and a …Sync call would wait for it forever; finish the transaction first, or use the promise API (fs.promises, or tx.fs inside the transaction)'
            : undefined,
      }),
    }),
    async close() {
      port1.close()
      await worker.terminate()
    },
  }
}
