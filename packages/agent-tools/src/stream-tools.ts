import { isAgentFsError } from '@agentfs/core'
import { checkMimeType } from '@agentfs/fs'
import { z } from 'zod'
import { ToolFailure } from './failure.js'
import { sha256Of } from './file-tools.js'
import { dirnameOf } from './posix.js'
import { inTransaction } from './transaction.js'
import type { AgentToolDefinition } from './types.js'

/**
 * The tools of the Stream-FS tool set that the general ones do not already cover, with its
 * semantics: `create_file` refuses an existing path, `rmdir` an unempty directory,
 * `delete_file` a directory; `exists` answers without failing.
 */

const createFile: AgentToolDefinition<{
  path: string
  content?: string | undefined
  parents?: boolean | undefined
  mime_type?: string | undefined
}> = {
  name: 'create_file',
  description:
    'Create a new file with `content` (default empty). Fails if anything already exists at the path — use write_file to replace a file. Missing parent directories are created unless parents is false.',
  inputSchema: z.object({
    path: z.string().describe('Absolute path of the new file'),
    content: z.string().optional().describe('Its content (default empty)'),
    parents: z.boolean().optional().describe('Create missing parent directories (default true)'),
    mime_type: z
      .string()
      .optional()
      .describe('Its media type, e.g. text/markdown (default: derived from the name and content)'),
  }),
  mutates: true,
  needs: 'fs',
  async handler(input, env) {
    const fsPath = await env.paths.resolve(input.path, env.fs)
    const display = env.paths.display(fsPath)
    // A bad media type is refused before anything (parents included) is made.
    const mimeType = input.mime_type === undefined ? undefined : checkMimeType(input.mime_type)
    const content = input.content ?? ''
    try {
      // The parents and the file in one transaction: a write the policy refuses makes nothing.
      await inTransaction(env.fs, async (fs) => {
        if (input.parents !== false) await fs.mkdir(dirnameOf(fsPath), { recursive: true })
        await fs.writeFile(fsPath, content, {
          flag: 'wx',
          ...(mimeType === undefined ? {} : { mimeType }),
        })
      })
    } catch (error) {
      if (isAgentFsError(error, 'EEXIST'))
        throw new ToolFailure(
          'EEXIST',
          `Error: ${display} already exists. Use write_file to replace it, or edit_file to change it.`,
        )
      if (isAgentFsError(error, 'ENOENT') && input.parents === false)
        throw new ToolFailure(
          'ENOENT',
          `Error: the parent directory ${env.paths.display(dirnameOf(fsPath))} does not exist (parents is false). Create it with mkdir first.`,
        )
      throw error
    }
    const { version } = await env.fs.stat(fsPath)
    const sha256 = sha256Of(content)
    return {
      text: `Created ${display} (${Buffer.byteLength(content)} bytes). [version: ${version}] [${sha256}]`,
      data: { version, sha256 },
    }
  },
}

const exists: AgentToolDefinition<{ path: string }> = {
  name: 'exists',
  description:
    'Whether something exists at a path, and what: answers `true (file)`, `true (directory)`, `true (symlink)` or `false`. Never fails for a missing path.',
  inputSchema: z.object({ path: z.string().describe('Absolute path') }),
  mutates: false,
  needs: 'fs',
  async handler(input, env) {
    const fsPath = await env.paths.resolve(input.path, env.fs)
    const stats = await env.fs.lstat(fsPath).catch((error: unknown) => {
      if (isAgentFsError(error, 'ENOENT') || isAgentFsError(error, 'ENOTDIR')) return undefined
      throw error
    })
    const type =
      stats === undefined
        ? undefined
        : stats.isDirectory()
          ? 'directory'
          : stats.isSymbolicLink()
            ? 'symlink'
            : stats.isFile()
              ? 'file'
              : 'special'
    return {
      text: type === undefined ? 'false' : `true (${type})`,
      data: { exists: type !== undefined, ...(type === undefined ? {} : { type }) },
    }
  },
}

const appendFile: AgentToolDefinition<{ path: string; content: string }> = {
  name: 'append_file',
  description:
    'Append `content` to the end of a file, creating it (and missing parent directories) if it does not exist. Nothing already in the file is changed; add a leading newline yourself if the file does not end with one.',
  inputSchema: z.object({
    path: z.string().describe('Absolute path of the file'),
    content: z.string().describe('Text to add at the end'),
  }),
  mutates: true,
  needs: 'fs',
  async handler(input, env) {
    const fsPath = await env.paths.resolve(input.path, env.fs)
    const display = env.paths.display(fsPath)
    const before = await env.fs.lstat(fsPath).catch(() => undefined)
    if (before?.isDirectory())
      throw new ToolFailure('EISDIR', `Error: ${display} is a directory; append to a file.`)
    await inTransaction(env.fs, async (fs) => {
      await fs.mkdir(dirnameOf(fsPath), { recursive: true })
      await fs.appendFile(fsPath, input.content)
    })
    const stats = await env.fs.stat(fsPath)
    return {
      text: `Appended ${Buffer.byteLength(input.content)} bytes to ${display} (now ${stats.size} bytes${before === undefined ? ', created' : ''}). [version: ${stats.version}]`,
      data: { version: stats.version, size: stats.size },
    }
  },
}

const rmdir: AgentToolDefinition<{ path: string }> = {
  name: 'rmdir',
  description:
    'Remove an empty directory. Fails if it has entries (delete them first, or use delete with recursive: true) or is not a directory.',
  inputSchema: z.object({ path: z.string().describe('Directory to remove') }),
  mutates: true,
  needs: 'fs',
  async handler(input, env) {
    const fsPath = await env.paths.resolve(input.path, env.fs)
    const display = env.paths.display(fsPath)
    if (display === '/')
      throw new ToolFailure('EPERM', 'Error: the root directory cannot be removed.')
    try {
      await env.fs.rmdir(fsPath)
    } catch (error) {
      if (isAgentFsError(error, 'ENOTEMPTY')) {
        const entries = await env.fs.readdir(fsPath)
        throw new ToolFailure(
          'ENOTEMPTY',
          `Error: ${display} is not empty (${entries.length} entries: ${entries.slice(0, 5).join(', ')}${entries.length > 5 ? ', …' : ''}). Delete them first, or use delete with recursive: true.`,
        )
      }
      throw error
    }
    return { text: `Removed the directory ${display}.` }
  },
}

const deleteFile: AgentToolDefinition<{ path: string }> = {
  name: 'delete_file',
  description:
    'Delete a file or a symbolic link (not what it points to). Fails for a directory: use rmdir or delete.',
  inputSchema: z.object({ path: z.string().describe('File to delete') }),
  mutates: true,
  needs: 'fs',
  async handler(input, env) {
    const fsPath = await env.paths.resolve(input.path, env.fs)
    const display = env.paths.display(fsPath)
    const stats = await env.fs.lstat(fsPath)
    if (stats.isDirectory())
      throw new ToolFailure(
        'EISDIR',
        `Error: ${display} is a directory. Use rmdir (empty) or delete with recursive: true.`,
      )
    await env.fs.unlink(fsPath)
    return { text: `Deleted ${display}.` }
  },
}

export const STREAM_TOOLS = [createFile, exists, appendFile, rmdir, deleteFile] as const
