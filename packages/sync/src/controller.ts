import { AgentFsError, fsck, type SlotAllocator } from '@agentfs/core'
import type { TursoAsyncDriver } from '@agentfs/driver-turso'
import type { AgentFS } from '@agentfs/sdk'
import type { Database } from '@tursodatabase/sync'
import { ancestorsOf, forgetOldest } from './merge-swap.js'
import { logConflicts, reconcile, type SyncConflict } from './reconcile.js'
import { newPushRecord, type PushRecord, REPLACED_BUDGET, type ReplacedContent } from './rules.js'
import type { SyncRemote } from './server.js'
import { type ClientState, writeState } from './state.js'
import type { AgentSync, OpenSyncedOptions, PullReport, SyncedAgentFS } from './types.js'

export interface Context {
  readonly options: OpenSyncedOptions
  readonly state: ClientState
  readonly slot: number
  readonly remote: SyncRemote
  /** This client's id allocator: what it handed out tells its rows from a peer's. */
  readonly allocator?: Pick<SlotAllocator, 'issued'>
}

export function withSync(
  agent: AgentFS,
  driver: TursoAsyncDriver,
  database: Database,
  { options, state, slot, remote, allocator }: Context,
  useRecord: (record: PushRecord) => void,
): SyncedAgentFS {
  const save = () => writeState(options.path, state)
  /**
   * What each pushed write started from, until the next reconciliation: in memory only (a
   * process that dies in between keeps a lost write as a copy instead of merging it).
   */
  const ancestors = new Map<number, ReplacedContent>()
  const report = (conflicts: readonly SyncConflict[]) => {
    for (const conflict of conflicts) options.sync.onConflict?.(conflict)
  }

  /** One push, holding the connection; what the rules saw is kept for reconciliation. */
  const pushOnce = () =>
    driver.exclusive(async () => {
      const record = newPushRecord()
      useRecord(record)
      try {
        await database.push()
      } finally {
        // Kept even when the push failed: the server may have applied part of it.
        state.swaps.push(...record.swaps)
        state.kv.push(...record.kv)
        for (const [ino, content] of ancestorsOf(record)) {
          ancestors.delete(ino)
          ancestors.set(ino, content)
        }
        forgetOldest(ancestors, REPLACED_BUDGET)
        save()
      }
      state.lastPushMs = Date.now()
      save()
    })

  const reconcileNow = async (): Promise<{ conflicts: SyncConflict[]; changed: boolean }> => {
    const swaps = state.swaps.length
    const kv = state.kv.length
    const result = await reconcile(
      agent.db,
      slot,
      { swaps: state.swaps.slice(0, swaps), kv: state.kv.slice(0, kv), ancestors },
      Date.now,
      allocator,
    )
    for (const swap of state.swaps.slice(0, swaps)) ancestors.delete(swap.ino)
    state.swaps.splice(0, swaps)
    state.kv.splice(0, kv)
    save()
    report(result.conflicts)
    return result
  }

  const pullNow = async (): Promise<PullReport> => {
    await pushOnce()
    let changed: boolean
    try {
      changed = await driver.exclusive(() => database.pull())
    } catch {
      // A local write between the push and the pull that the engine cannot replay over the
      // pulled state (a name taken meanwhile): push it through the rules, then pull again.
      await pushOnce()
      changed = await driver.exclusive(() => database.pull())
    }
    state.lastPullMs = Date.now()
    save()
    const result = await reconcileNow()
    if (result.changed) await pushOnce()
    return { changed, conflicts: result.conflicts }
  }

  /** One sync operation at a time (a background round and a caller's call take turns). */
  let chain: Promise<unknown> = Promise.resolve()
  const serial = <T>(fn: () => Promise<T>): Promise<T> => {
    const next = chain.then(fn, fn)
    chain = next.catch(() => undefined)
    return next
  }

  const push = () =>
    serial(async () => {
      try {
        await pushOnce()
      } catch (error) {
        let detail = (error as Error).message
        try {
          await pullNow()
          // What a partly applied push can leave behind that the rules do not cover: checked,
          // and the safe findings repaired (they are pushed with the next round).
          const check = await fsck(agent.db, { repair: true })
          const left = check.findings.length - check.repaired.length
          detail += `; pulled and reconciled; fsck: ${check.findings.length} finding(s), ${check.repaired.length} repaired${left > 0 ? `, ${left} left (run agentfs fsck)` : ''}`
        } catch (pullError) {
          detail += `; the pull after it failed too: ${(pullError as Error).message}`
        }
        const conflict: SyncConflict = {
          slot,
          atMs: Date.now(),
          kind: 'push-failed',
          path: '/',
          detail,
        }
        await agent.db
          .transaction((tx) => logConflicts(tx, slot, [conflict]))
          .catch(() => undefined)
        report([conflict])
        throw new AgentFsError(
          'REMOTE',
          `push to ${remote.url} failed (${(error as Error).message}); the server may have applied part of it, so this client pulled and reconciled: see agent.sync.conflicts()`,
          { cause: error },
        )
      }
    })

  let timer: NodeJS.Timeout | undefined
  let running: Promise<unknown> = Promise.resolve()
  let active = false
  /** The failure of the last background round, until a round succeeds. */
  let lastError: { atMs: number; message: string } | undefined
  const schedule = (intervalMs: number) => {
    const delay = intervalMs * (0.75 + Math.random() * 0.5)
    timer = setTimeout(() => {
      running = serial(pullNow)
        .then(() => {
          lastError = undefined
        })
        .catch((error: unknown) => {
          lastError = { atMs: Date.now(), message: (error as Error).message ?? String(error) }
          options.sync.onError?.(error)
        })
        .finally(() => {
          if (active) schedule(intervalMs)
        })
    }, delay)
    timer.unref()
  }

  const sync: AgentSync = {
    push,
    pull: () => serial(pullNow),
    async status() {
      const stats = await driver.exclusive(() => database.stats())
      return {
        url: remote.url,
        clientId: state.clientId,
        slot,
        lastPushMs: state.lastPushMs,
        lastPullMs: state.lastPullMs,
        unreconciled: state.swaps.length + state.kv.length,
        networkSentBytes: stats.networkSentBytes,
        networkReceivedBytes: stats.networkReceivedBytes,
        background: active,
        ...(lastError === undefined ? {} : { lastError }),
      }
    },
    async conflicts() {
      const { rows } = await agent.db.execute<{
        slot: number
        at_ms: number
        kind: SyncConflict['kind']
        path: string
        detail: string
      }>({
        sql: 'SELECT slot, at_ms, kind, path, detail FROM agentfs_sync_conflict ORDER BY at_ms, slot, seq',
      })
      return rows.map((row) => ({
        slot: row.slot,
        atMs: row.at_ms,
        kind: row.kind,
        path: row.path,
        detail: row.detail,
      }))
    },
    start(intervalMs = options.sync.intervalMs ?? 2000) {
      if (active) return
      if (!(intervalMs > 0))
        throw new AgentFsError('INVALID_ARGUMENT', `sync interval ${intervalMs} ms is not positive`)
      active = true
      schedule(intervalMs)
    },
    async stop() {
      active = false
      if (timer !== undefined) clearTimeout(timer)
      await running
    },
  }
  const close = agent.close.bind(agent)
  Object.defineProperty(agent, 'sync', { value: sync, enumerable: true })
  Object.defineProperty(agent, 'path', { value: options.path, enumerable: true })
  Object.defineProperty(agent, 'close', {
    value: async () => {
      await sync.stop()
      await chain
      await close()
      await driver.close()
    },
  })
  if (options.sync.intervalMs !== undefined) sync.start(options.sync.intervalMs)
  return agent as SyncedAgentFS
}
