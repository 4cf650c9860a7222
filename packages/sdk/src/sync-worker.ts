import { type MessagePort, workerData } from 'node:worker_threads'
import type { SyncTarget } from '@agentfs/fs'
import type { AgentFSOptions } from './agentfs.js'

// The worker behind `agent.nodeFs()`'s `…Sync` calls: its own connection to the same database
// file, opened with the agent's options (policy included), answering one call at a time.
const { port, shared, options } = workerData as {
  port: MessagePort
  shared: SharedArrayBuffer
  options: AgentFSOptions
}
try {
  const [{ serveSync, toNodeFs }, { AgentFS }] = await Promise.all([
    import('@agentfs/fs'),
    import('./agentfs.js'),
  ])
  const ready = AgentFS.open({ ...options, migrate: false }).then(
    (agent): SyncTarget => ({
      fs: agent.fs,
      promises: toNodeFs(agent.fs).promises as Record<string, unknown>,
      // A change by path runs in a transaction of its own, taken back if the caller gave up.
      transaction: (fn) =>
        agent.transaction((tx) => fn(toNodeFs(tx.fs).promises as Record<string, unknown>)),
    }),
  )
  // A failure to open is every call's answer (serveSync awaits `ready`), not an unhandled one.
  ready.catch(() => undefined)
  serveSync(port, shared, ready)
} catch (error) {
  // The caller is blocked waiting: answer every call with why the worker could not start.
  const words = new Int32Array(shared)
  port.on('message', ({ id }: { id: number }) => {
    port.postMessage({
      id,
      error: {
        kind: 'Error',
        message: `the sync worker could not start: ${(error as Error).message}`,
      },
    })
    // The reply word of the bridge (see portSyncBridge): the id of the reply posted.
    Atomics.store(words, 0, id)
    Atomics.notify(words, 0)
  })
}
