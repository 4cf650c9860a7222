import type { AnyAgentToolDefinition } from '@agentfs/agent-tools'
import { createContext, type MemoryToolbeltOptions } from './context.js'
import { eventTools } from './event-tools.js'
import { gardenTools } from './garden-tools.js'
import { readTools } from './read-tools.js'
import { writeTools } from './write-tools.js'

/**
 * Seed 003's toolbelt for a user's garden, as agent tool definitions: give them to
 * `createAgentTools({ fs, audit, tools })` (and so to every adapter) with the agent's
 * filesystem. Every write is checked against the hard blocks, linted, recorded as an event in
 * its own transaction, and applied once per idempotency key (the caller's, or the seed's scope
 * key: a hash of the user, the tool, the file and section, and the request).
 */
export function memoryTools(options: MemoryToolbeltOptions): AnyAgentToolDefinition[] {
  const ctx = createContext(options)
  return [...readTools(ctx), ...writeTools(ctx), ...gardenTools(ctx), ...eventTools(ctx)]
}
