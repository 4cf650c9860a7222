import type { AnyAgentToolDefinition } from '@agentfs/agent-tools'
import type { FileSystem } from '@agentfs/fs'
import type { MemoryEvent } from '../events/event.js'
import type { EventFilters, EventReport } from '../events/filters.js'
import { PostgresEventStore, type ReconcileReport } from '../events/postgres-store.js'
import {
  createContext,
  databaseFor,
  type MemoryContext,
  type MemoryToolbeltOptions,
} from './context.js'
import { eventTools } from './event-tools.js'
import { gardenTools } from './garden-tools.js'
import { readTools } from './read-tools.js'
import { reconcileEvents } from './saga.js'
import { writeTools } from './write-tools.js'

function toolsOf(ctx: MemoryContext): AnyAgentToolDefinition[] {
  return [...readTools(ctx), ...writeTools(ctx), ...gardenTools(ctx), ...eventTools(ctx)]
}

/**
 * Seed 003's toolbelt for a user's garden, as agent tool definitions: give them to
 * `createAgentTools({ fs, audit, tools })` (and so to every adapter) with the agent's
 * filesystem. Every write is checked against the hard blocks, linted, recorded as an event in
 * its own transaction, and applied once per idempotency key (the caller's, or the seed's scope
 * key: a hash of the user, the tool, the file and section, and the request). With events in
 * Postgres, use {@link openMemory}, which settles what a crash left pending.
 */
export function memoryTools(options: MemoryToolbeltOptions): AnyAgentToolDefinition[] {
  return toolsOf(createContext(options))
}

/** Options of {@link openMemory}: the toolbelt's, and the filesystem the garden lives in. */
export interface MemoryOptions extends MemoryToolbeltOptions {
  /** The AgentFS filesystem of the garden (the one the tools will be given). */
  readonly fs: FileSystem
}

/** A user's memory: the toolbelt, and its events. */
export interface Memory {
  readonly tools: AnyAgentToolDefinition[]
  /** What reconciliation at open settled (empty with events in the database). */
  readonly reconciled: ReconcileReport
  /**
   * Settles the user's pending Postgres events now (see `PostgresEventStore.reconcile`);
   * nothing to do with events in the database, where a write and its event are one transaction.
   */
  reconcile(options?: { olderThanMs?: number }): Promise<ReconcileReport>
  /** The user's events matching `filters`, newest first. */
  query(filters?: Omit<EventFilters, 'user_id'>): Promise<MemoryEvent[]>
  /** Checks the HMAC of every event of the user with the toolbelt's keys. */
  verify(): Promise<EventReport>
  /** Ends the Postgres pool the toolbelt opened (not one it was given). */
  close(): Promise<void>
}

/**
 * Opens a user's memory: the toolbelt of {@link memoryTools} over `options.fs`, with the events
 * store ready — with Postgres, its tables migrated and the user's pending events reconciled
 * (seed 003: "reconcile at startup").
 */
export async function openMemory(options: MemoryOptions): Promise<Memory> {
  const ctx = createContext(options)
  const db = databaseFor(options.fs)
  const keys = ctx.keys(db)
  const pg = await ctx.postgres()
  const none: ReconcileReport = { settled: [], skipped: [] }
  const reconcile = async (o: { olderThanMs?: number } = {}) =>
    pg ? reconcileEvents(ctx, pg, options.fs, o) : none
  const reconciled = await reconcile()
  const userId = ctx.garden.userId
  return {
    tools: toolsOf(ctx),
    reconciled,
    reconcile,
    query: (filters = {}) => ctx.query(db, { ...filters, user_id: userId }),
    verify: () => (pg ? pg.verify(keys, { userId }) : ctx.local(db).verify(db, keys, { userId })),
    close: async () => {
      if (pg && !(options.events?.postgres instanceof PostgresEventStore)) await pg.close()
    },
  }
}
