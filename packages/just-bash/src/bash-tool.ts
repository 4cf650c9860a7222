import type { AgentToolDefinition, OutputLimits, ToolEnvironment } from '@agentfs/agent-tools'
import type { BashOptions } from 'just-bash'
import { z } from 'zod'
import { BashFileSystem } from './bash-fs.js'
import { runScript } from './run.js'

/** Options of {@link bashTool}. */
export interface BashToolOptions {
  /** Directory scripts start in, in the agent's paths (default `/`; created when missing). */
  readonly cwd?: string
  /** Environment variables of every script. */
  readonly env?: Record<string, string>
  /**
   * just-bash's execution limits (commands, loop iterations, call depth, output sizes, …);
   * its defaults apply to what is not given.
   */
  readonly executionLimits?: BashOptions['executionLimits']
  /** Wall-clock limit of one script in milliseconds (default 30,000); then it is aborted. */
  readonly timeoutMs?: number
  /** Only these commands (just-bash's names); default: all of just-bash's, no network. */
  readonly commands?: BashOptions['commands']
  /** Name of the tool (default `bash`). */
  readonly name?: string
}

const inputSchema = z.object({
  command: z
    .string()
    .min(1)
    .describe('The bash script to run: pipes, redirections, loops, here-documents all work.'),
})

/**
 * A `bash` agent tool: runs a script with just-bash (a bash interpreter in JavaScript — no
 * process is started, no host file is reachable) on the agent's AgentFS filesystem. Add it to
 * any front end with `tools: [bashTool()]` (`createAgentTools`, `aiSdkTools`, `openAiAgentsTools`,
 * `mastraTools`, the MCP server): it gets their validation, audit (one `tool_calls` row per
 * script, its changes attributed to the call in the change feed), `root`/`allowedRoots`
 * confinement and read-only mode (changes fail with EROFS; reading commands still work).
 * Output is stdout, then stderr, then the exit status, capped like every tool's.
 */
export function bashTool(
  options: BashToolOptions = {},
): AgentToolDefinition<z.infer<typeof inputSchema>> {
  const _timeoutMs = options.timeoutMs ?? 30_000
  return {
    name: options.name ?? 'bash',
    description:
      'Run a bash script in the workspace (a sandboxed bash: coreutils, grep, sed, awk, find, tar, jq, …; no network, no host programs). Use it for pipelines and bulk changes; paths are the same as the file tools. Returns stdout, stderr and the exit status.',
    inputSchema,
    // It honours read-only mode itself (its filesystem refuses changes), so read-only agents keep it.
    mutates: false,
    // A script can change files: it takes an idempotency_key (then it applies all or nothing).
    idempotent: true,
    needs: 'fs',
    async handler(input, env: ToolEnvironment, limits: OutputLimits) {
      const fs = new BashFileSystem({
        fs: env.fs,
        base: env.fs,
        paths: env.paths,
        readOnly: env.readOnly === true,
      })
      const result = await runScript(fs, input.command, options, env.readOnly === true)
      let text = result.stdout
      if (result.stderr)
        text += `${text && !text.endsWith('\n') ? '\n' : ''}[stderr]\n${result.stderr}`
      text += `${text && !text.endsWith('\n') ? '\n' : ''}[exit status ${result.exitCode}]`
      if (text.length > limits.maxChars)
        text = `${text.slice(0, limits.maxChars)}\n… output truncated at ${limits.maxChars} characters; write it to a file and read that in parts.`
      return {
        text,
        ...(result.exitCode === 0 ? {} : { isError: true, code: 'EXIT' }),
        data: { exitCode: result.exitCode },
      }
    },
  }
}
