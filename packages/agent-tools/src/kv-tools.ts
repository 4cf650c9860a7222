import { isAgentFsError } from '@agentfs/core'
import type { KvConflictError } from '@agentfs/kv'
import { z } from 'zod'
import { ToolFailure } from './failure.js'
import type { AgentToolDefinition, ToolEnvironment } from './types.js'

const store = (env: ToolEnvironment) => {
  if (!env.kv)
    throw new ToolFailure('UNAVAILABLE', 'Error: no key-value store is configured for these tools.')
  return env.kv
}

const kvGet: AgentToolDefinition<{ key: string }> = {
  name: 'kv_get',
  description:
    "Read a value from the agent's key-value memory. Returns the JSON value and its version.",
  inputSchema: z.object({ key: z.string().min(1) }),
  mutates: false,
  needs: 'kv',
  async handler(input, env) {
    const entry = await store(env).getEntry(input.key)
    if (!entry) return { text: `Key '${input.key}' is not set.`, isError: true, code: 'NOT_FOUND' }
    return {
      text: `${JSON.stringify(entry.value, null, 2)}\n[version: ${entry.version}]`,
      data: { value: entry.value, version: entry.version },
    }
  },
}

const kvSet: AgentToolDefinition<{
  key: string
  value: unknown
  expected_version?: number | undefined
}> = {
  name: 'kv_set',
  description:
    "Store a JSON value under a key in the agent's memory (keys like `user:prefs`). With expected_version (from kv_get), the write is refused if the key changed since.",
  inputSchema: z.object({
    key: z.string().min(1),
    value: z.unknown(),
    expected_version: z.number().int().min(0).optional(),
  }),
  mutates: true,
  needs: 'kv',
  async handler(input, env) {
    try {
      const version = await store(env).set(
        input.key,
        input.value ?? null,
        input.expected_version === undefined ? {} : { ifVersion: input.expected_version },
      )
      return { text: `Stored '${input.key}'. [version: ${version}]`, data: { version } }
    } catch (error) {
      if (isAgentFsError(error, 'CONFLICT')) {
        const current = (error as KvConflictError).currentVersion
        throw new ToolFailure(
          'STALE',
          `Key '${input.key}' has been modified since read (version ${input.expected_version}, now ${current ?? 'deleted'}). Read it again before writing it.`,
        )
      }
      throw error
    }
  },
}

const kvDelete: AgentToolDefinition<{ key: string }> = {
  name: 'kv_delete',
  description: "Remove a key from the agent's memory.",
  inputSchema: z.object({ key: z.string().min(1) }),
  mutates: true,
  needs: 'kv',
  async handler(input, env) {
    const deleted = await store(env).delete(input.key)
    return deleted
      ? { text: `Deleted '${input.key}'.` }
      : { text: `Key '${input.key}' was not set.`, isError: true, code: 'NOT_FOUND' }
  },
}

const kvList: AgentToolDefinition<{ prefix?: string | undefined; limit?: number | undefined }> = {
  name: 'kv_list',
  description:
    "List keys of the agent's memory in order, optionally only those starting with `prefix` (case-sensitive).",
  inputSchema: z.object({
    prefix: z.string().optional(),
    limit: z.number().int().min(1).max(1000).optional(),
  }),
  mutates: false,
  needs: 'kv',
  async handler(input, env) {
    const page = await store(env).list({
      ...(input.prefix === undefined ? {} : { prefix: input.prefix }),
      limit: input.limit ?? 100,
    })
    if (page.entries.length === 0)
      return {
        text: input.prefix ? `No keys start with '${input.prefix}'.` : 'The memory is empty.',
      }
    const lines = page.entries.map((e) => `${e.key} = ${JSON.stringify(e.value).slice(0, 200)}`)
    return {
      text: `${lines.join('\n')}${page.cursor ? '\n… [more keys — raise limit or narrow the prefix]' : ''}`,
    }
  },
}

export const KV_TOOLS = [kvGet, kvSet, kvDelete, kvList] as const
