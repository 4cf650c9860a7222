import { AgentFsError } from '@agentfs/core'
import { failureOutput } from './failure.js'
import { FILE_TOOLS } from './file-tools.js'
import { KV_TOOLS } from './kv-tools.js'
import { createPathPolicy } from './paths.js'
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
  ...TREE_TOOLS,
  ...KV_TOOLS,
] as unknown as readonly AgentToolDefinition<never>[]

const DEFAULT_LIMITS: OutputLimits = {
  maxChars: 100_000,
  maxLines: 2000,
  maxLineLength: 2000,
  maxResults: 100,
}

/**
 * Where tools run: the path mapping (`root`, `allowedRoots`) and the filesystem, narrowed to the
 * allowed roots when it can enforce a policy itself. Every front end (the tools, MCP resources)
 * builds on this one environment, so all of them apply the same check.
 */
export function createToolEnvironment(
  options: Pick<AgentToolsOptions, 'fs' | 'kv' | 'root' | 'allowedRoots' | 'readOnly'>,
): ToolEnvironment {
  const paths = createPathPolicy({
    ...(options.root === undefined ? {} : { root: options.root }),
    ...(options.allowedRoots === undefined ? {} : { allowedRoots: options.allowedRoots }),
    ...(options.readOnly === undefined ? {} : { readOnly: options.readOnly }),
  })
  return { fs: paths.confine(options.fs), ...(options.kv ? { kv: options.kv } : {}), paths }
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
  const known = new Set(TOOL_DEFINITIONS.map((d) => d.name))
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
  const selected = TOOL_DEFINITIONS.filter(
    (d) =>
      (options.include === undefined || options.include.includes(d.name)) &&
      !options.exclude?.includes(d.name) &&
      !(options.readOnly && d.mutates) &&
      (d.needs === 'fs' || options.kv !== undefined),
  )
  const tools = new Map<string, AgentTool>()
  for (const definition of selected) {
    const name = `${options.prefix ?? ''}${options.rename?.[definition.name] ?? definition.name}`
    const tool: AgentTool = {
      name,
      originalName: definition.name,
      description: definition.description,
      inputSchema: definition.inputSchema,
      mutates: definition.mutates,
      async execute(input: unknown): Promise<ToolOutput> {
        const startedAt = Date.now()
        let output: ToolOutput
        const parsed = definition.inputSchema.safeParse(input)
        if (!parsed.success) {
          output = {
            text: `Error: invalid input for ${name}: ${parsed.error.issues.map((i) => `${i.path.join('.') || 'input'}: ${i.message}`).join('; ')}`,
            isError: true,
            code: 'EINVAL',
          }
        } else {
          try {
            output = await definition.handler(parsed.data as never, env, limits)
          } catch (error) {
            output = failureOutput(error, paths.display)
          }
        }
        if (options.audit) {
          await options.audit.record({
            name,
            parameters: input ?? null,
            ...(output.isError
              ? { error: output.text }
              : {
                  result:
                    output.data === undefined ? output.text : { text: output.text, ...output.data },
                }),
            startedAt,
            completedAt: Math.max(Date.now(), startedAt),
            ...(options.sessionId === undefined ? {} : { sessionId: options.sessionId }),
          })
        }
        return output
      },
    }
    tools.set(name, tool)
  }
  return tools
}
