import { ToolFailure } from '@agentfs/agent-tools'
import { Bash } from 'just-bash'
import { type BashFileSystem, ScriptLimit } from './bash-fs.js'
import type { BashToolOptions } from './bash-tool.js'

/** What a script printed and how it ended. */
export interface ScriptResult {
  readonly stdout: string
  readonly stderr: string
  readonly exitCode: number
}

/**
 * Runs one script with just-bash on `fs`, in `cwd` (created when missing and writable), under
 * the execution limits and a wall-clock limit: a script past it is aborted (ETIMEDOUT).
 */
export async function runScript(
  fs: BashFileSystem,
  command: string,
  options: BashToolOptions,
  readOnly: boolean,
): Promise<ScriptResult> {
  const cwd = options.cwd ?? '/'
  if (!readOnly && cwd !== '/') await fs.mkdir(cwd, { recursive: true })
  const timeoutMs = options.timeoutMs ?? 30_000
  const limit = new ScriptLimit(timeoutMs)
  const { signal } = limit
  const bash = new Bash({
    // The filesystem checks the time limit on every call (just-bash checks its signal between
    // some commands only, and no timer fires while a loop's calls settle as microtasks).
    fs: fs.withLimit(limit),
    cwd,
    ...(options.env ? { env: options.env } : {}),
    ...(options.executionLimits ? { executionLimits: options.executionLimits } : {}),
    ...(options.commands ? { commands: options.commands } : {}),
  })
  try {
    const result = await bash.exec(command, { signal })
    if (limit.expired) throw timedOut(timeoutMs)
    return { stdout: result.stdout, stderr: result.stderr, exitCode: result.exitCode }
  } catch (error) {
    if (limit.expired) throw timedOut(timeoutMs)
    // just-bash lets a filesystem error in a redirection's final write escape (its own
    // filesystems never fail there); here a refused write (EACCES, EROFS, EDQUOT…) is the
    // script's failure, reported as bash would.
    if (error instanceof Error && typeof (error as { code?: unknown }).code === 'string')
      return { stdout: '', stderr: `bash: ${error.message}\n`, exitCode: 1 }
    throw error
  } finally {
    limit.dispose()
  }
}

const timedOut = (ms: number) =>
  new ToolFailure(
    'ETIMEDOUT',
    `Error: the script ran longer than ${ms} ms and was stopped; changes it made before that are kept. Split the work into shorter scripts.`,
  )
