import { createHash } from 'node:crypto'
import { AgentFsError, isAgentFsError, systemClock, withActor } from '@agentfs/core'
import type { z } from 'zod'
import { failureOutput } from './failure.js'
import { FILE_TOOLS } from './file-tools.js'
import { HISTORY_TOOLS, keepsHistory } from './history-tools.js'
import {
  idempotencyBinder,
  runIdempotent,
  takeIdempotencyKey,
  withIdempotencyKey,
} from './idempotent.js'
import { KV_TOOLS } from './kv-tools.js'
import { takeMessage, withMessageArgument } from './message.js'
import { PATCH_TOOLS } from './patch-tools.js'
import { createPathPolicy } from './paths.js'
import { canSearch, SEARCH_TOOLS } from './search-tools.js'
import { STREAM_TOOLS } from './stream-tools.js'
import { TREE_TOOLS } from './tree-tools.js'
import type {
  AgentTool,
  AgentToolDefinition,
  AgentToolsOptions,
  OutputLimits,
  ToolEnvironment,
  ToolOutput,
} from './types.js'

/** Every tool definition, in the order tools are listed. */
export const TOOL_DEFINITIONS: readonly AgentToolDefinition<never>[] = [
  ...FILE_TOOLS,
  ...PATCH_TOOLS,
  ...STREAM_TOOLS,
  ...TREE_TOOLS,
  ...SEARCH_TOOLS,
  ...KV_TOOLS,
  ...HISTORY_TOOLS,
] as unknown as readonly AgentToolDefinition<never>[]

/** Default of `maxInputBytes`. */
export const MAX_INPUT_BYTES = 64 * 1024 * 1024
/** Nesting followed when measuring or copying an input (deeper is refused). */
const MAX_DEPTH = 64

/** Bytes of the strings in `value` (UTF-16 length, an upper bound of what matters), bounded. */
function inputSize(value: unknown, depth = 0): number {
  if (depth > MAX_DEPTH) return Number.POSITIVE_INFINITY
  if (typeof value === 'string') return value.length
  if (Array.isArray(value)) return value.reduce((n: number, v) => n + inputSize(v, depth + 1), 0)
  if (value && typeof value === 'object')
    return Object.entries(value).reduce((n, [k, v]) => n + k.length + inputSize(v, depth + 1), 0)
  return 8
}

/**
 * The input as the audit log keeps it: whole — every string, however long, so nothing an agent
 * sends (a command padded past any preview, a large write) drops out of the audit. Only nesting
 * past {@link MAX_DEPTH} levels, which the tools refuse before running (EFBIG), is replaced by
 * a marker with the SHA-256 of its JSON, where it has one.
 */
export function auditCopy(value: unknown, depth = 0): unknown {
  if (depth > MAX_DEPTH) {
    let sha256: string | undefined
    try {
      sha256 = createHash('sha256')
        .update(JSON.stringify(value) ?? 'null')
        .digest('hex')
    } catch {
      // Deeper than JSON.stringify can go: the refusal is recorded without it.
    }
    return { $nested: 'too deeply to keep; the call was refused', ...(sha256 ? { sha256 } : {}) }
  }
  if (Array.isArray(value)) return value.map((v) => auditCopy(v, depth + 1))
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, auditCopy(v, depth + 1)]))
  return value
}

const wallClock = systemClock()

const DEFAULT_LIMITS: OutputLimits = {
  maxChars: 100_000,
  maxLines: 2000,
  maxLineLength: 2000,
  maxImageBytes: 5 * 1024 * 1024,
  maxPdfBytes: 50 * 1024 * 1024,
  maxResults: 100,
}

/**
 * Where tools run: the path mapping (`root`, `allowedRoots`) and the filesystem, narrowed to the
 * allowed roots when it can enforce a policy itself. Every front end (the tools, MCP resources)
 * builds on this one environment, so all of them apply the same check.
 */
export function createToolEnvironment(
  options: Pick<AgentToolsOptions, 'fs' | 'kv' | 'changes' | 'root' | 'allowedRoots' | 'readOnly'>,
): ToolEnvironment {
  const paths = createPathPolicy({
    ...(options.root === undefined ? {} : { root: options.root }),
    ...(options.allowedRoots === undefined ? {} : { allowedRoots: options.allowedRoots }),
    ...(options.readOnly === undefined ? {} : { readOnly: options.readOnly }),
  })
  return {
    fs: paths.confine(options.fs),
    ...(options.kv ? { kv: options.kv } : {}),
    ...(options.changes ? { changes: options.changes } : {}),
    paths,
    readOnly: options.readOnly === true,
  }
}

/**
 * The agent tools over a filesystem (and optionally a key-value store), ready for any adapter:
 * each validates its input, runs, returns text (errors as values, never thrown) and records the
 * call exactly once in `tool_calls` when `audit` is given.
 *
 * @example
 * const tools = createAgentTools({ fs: agent.fs, kv: agent.kv, audit: agent.tools, sessionId: 'chat-1' })
 * const out = await tools.get('read_file')!.execute({ path: '/notes.md' })
 */
export function createAgentTools(options: AgentToolsOptions): Map<string, AgentTool> {
  const limits = { ...DEFAULT_LIMITS, ...options.limits }
  const env = createToolEnvironment(options)
  const paths = env.paths
  const maxInput = options.maxInputBytes ?? MAX_INPUT_BYTES
  const definitions = [...TOOL_DEFINITIONS, ...(options.tools ?? [])]
  const known = new Set<string>()
  for (const d of definitions) {
    if (known.has(d.name))
      throw new AgentFsError(
        'INVALID_ARGUMENT',
        `Two tools are named '${d.name}'; give the added tool another name`,
      )
    known.add(d.name)
  }
  for (const name of [
    ...(options.include ?? []),
    ...(options.exclude ?? []),
    ...Object.keys(options.rename ?? {}),
  ]) {
    if (!known.has(name))
      throw new AgentFsError(
        'INVALID_ARGUMENT',
        `Unknown tool '${name}'; tools are ${[...known].join(', ')}`,
      )
  }
  const selected = definitions.filter(
    (d) =>
      (options.include === undefined || options.include.includes(d.name)) &&
      !options.exclude?.includes(d.name) &&
      !(options.readOnly && d.mutates) &&
      (d.needs === 'fs' ||
        (d.needs === 'kv' && options.kv !== undefined) ||
        (d.needs === 'changes' && options.changes !== undefined) ||
        (d.needs === 'history' && keepsHistory(options.fs)) ||
        (d.needs === 'search' && canSearch(options.fs))),
  )
  const tools = new Map<string, AgentTool>()
  for (const definition of selected) {
    const name = `${options.prefix ?? ''}${options.rename?.[definition.name] ?? definition.name}`
    // Tools that change something take an optional idempotency_key (see idempotent.ts).
    const keyed = definition.idempotent ?? definition.mutates
    const tool: AgentTool = {
      name,
      originalName: definition.name,
      description: definition.description,
      // …and an optional message: why, recorded with every change the call makes.
      inputSchema: withMessageIf(
        definition.mutates,
        keyed ? withIdempotencyKey(definition.inputSchema) : definition.inputSchema,
      ),
      mutates: definition.mutates,
      async execute(input: unknown): Promise<ToolOutput> {
        // The audit log's own clock, as `track` uses: nanoseconds, not whole milliseconds.
        const clock = options.audit?.clock ?? wallClock
        const startedAt = clock.now()
        const callToken = options.audit?.callToken()
        const record = (output: ToolOutput, metadata?: Record<string, unknown>) => ({
          name,
          parameters: auditCopy(input ?? null) as never,
          ...(output.isError
            ? { error: output.text }
            : {
                result:
                  output.data === undefined ? output.text : { text: output.text, ...output.data },
              }),
          startedAt,
          completedAt: clock.now(),
          ...(options.sessionId === undefined ? {} : { sessionId: options.sessionId }),
          ...(callToken === undefined ? {} : { callToken }),
          ...(metadata === undefined ? {} : { metadata }),
        })
        // Recorded as under way before the tool runs: a crash mid-call leaves a visible record.
        // A call the audit's full payload store refuses never runs; the refusal is recorded.
        const start = async (): Promise<ToolOutput | undefined> => {
          if (!options.audit || callToken === undefined) return undefined
          try {
            await options.audit.start({
              name,
              parameters: auditCopy(input ?? null),
              startedAt,
              callToken,
              ...(options.sessionId === undefined ? {} : { sessionId: options.sessionId }),
            })
          } catch (error) {
            if (!isAgentFsError(error, 'AUDIT_FULL')) throw error
            return {
              text: `Error: ${error.message}. Nothing was done; ask the user to raise the audit budget.`,
              isError: true,
              code: 'ENOSPC',
            }
          }
          return undefined
        }
        let output: ToolOutput
        const { key, args: own } = keyed ? takeIdempotencyKey(input) : { args: input }
        const {
          message,
          error: badMessage,
          args,
        } = definition.mutates ? takeMessage(own) : { args: own }
        const actor = {
          sessionId: options.sessionId,
          callToken,
          ...(message === undefined ? {} : { message }),
        }
        // The whole input, key included: an oversized key is refused like any oversized input.
        const size = inputSize(input)
        const parsed = size > maxInput ? undefined : definition.inputSchema.safeParse(args)
        if (badMessage !== undefined) {
          output = { text: `Error: ${badMessage}.`, isError: true, code: 'EINVAL' }
        } else if (!parsed) {
          output = {
            text: `Error: the input is ${Number.isFinite(size) ? `${size} bytes` : 'nested too deeply'}, over the limit of ${maxInput} bytes; split the work (write a large file in parts with several calls).`,
            isError: true,
            code: 'EFBIG',
          }
        } else if (!parsed.success) {
          output = {
            text: `Error: invalid input for ${name}: ${parsed.error.issues.map((i) => `${i.path.join('.') || 'input'}: ${i.message}`).join('; ')}`,
            isError: true,
            code: 'EINVAL',
          }
        } else if (key !== undefined) {
          const binder = idempotencyBinder(options)
          if (typeof binder === 'string')
            output = { text: `Error: ${binder}`, isError: true, code: 'EINVAL' }
          // Runs, records the call and the key in one transaction (and records failures after).
          else {
            const refused = await start()
            if (refused) return refused
            return runIdempotent({
              binder,
              scope: `tool:${definition.name}`,
              key,
              args,
              now: () => clock.now(),
              ...(options.idempotencyTtlMs === undefined
                ? {}
                : { ttlMs: options.idempotencyTtlMs }),
              run: (stores) =>
                withActor(actor, () =>
                  definition.handler(
                    parsed.data as never,
                    createToolEnvironment({ ...options, ...stores }),
                    limits,
                  ),
                ),
              failure: (error) => failureOutput(error, paths.display),
              record,
              ...(options.audit ? { audit: options.audit } : {}),
            })
          }
        } else {
          const refused = await start()
          if (refused) return refused
          try {
            // Changes the tool makes are attributed to this call in the change feed.
            output = await withActor(actor, () =>
              definition.handler(parsed.data as never, env, limits),
            )
          } catch (error) {
            output = failureOutput(error, paths.display)
          }
        }
        if (options.audit) await options.audit.record(record(output))
        return output
      },
    }
    tools.set(name, tool)
  }
  return tools
}

const withMessageIf = (mutates: boolean, schema: z.ZodType) =>
  mutates ? withMessageArgument(schema) : schema
