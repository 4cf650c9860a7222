import type { ToolCalls } from '@agentfs/tool-calls'
import { BashFileSystem, type BashFileSystemOptions } from './bash-fs.js'
import type { BashToolOptions } from './bash-tool.js'
import { runScript, type ScriptResult } from './run.js'

/** Options of {@link agentFsSandbox}. */
export interface AgentFsSandboxOptions
  extends BashFileSystemOptions,
    Omit<BashToolOptions, 'name'> {
  /** Where every command and file upload is recorded (`agent.tools`). */
  readonly audit?: ToolCalls
  /** Session recorded with every call. */
  readonly sessionId?: string
}

/** The sandbox shape `bash-tool`'s `createBashTool({ sandbox })` takes. */
export interface AgentFsSandbox {
  executeCommand(command: string): Promise<ScriptResult>
  readFile(path: string): Promise<string>
  writeFiles(files: Array<{ path: string; content: string | Buffer }>): Promise<void>
}

/**
 * A `bash-tool` sandbox on AgentFS: `createBashTool({ sandbox: agentFsSandbox({ fs: agent.fs,
 * audit: agent.tools }) })` gives an AI SDK agent bash, readFile and writeFile tools whose files
 * are the database's, confined by `root`/`allowedRoots`, read-only when asked, every command
 * recorded in `tool_calls` with its changes attributed to it in the change feed.
 */
export function agentFsSandbox(options: AgentFsSandboxOptions): AgentFsSandbox {
  const fs = new BashFileSystem(options)
  const readOnly = options.readOnly === true
  const audited = <T>(name: string, parameters: unknown, fn: () => Promise<T>): Promise<T> =>
    options.audit
      ? options.audit.track(name, parameters, fn, {
          ...(options.sessionId === undefined ? {} : { sessionId: options.sessionId }),
        })
      : fn()
  return {
    executeCommand: (command) =>
      audited('bash', { command }, () => runScript(fs, command, options, readOnly)),
    readFile: (path) => fs.readFile(path),
    writeFiles: (files) =>
      audited('write_files', { paths: files.map((f) => f.path) }, async () => {
        for (const file of files) await fs.writeFile(file.path, file.content)
      }),
  }
}
