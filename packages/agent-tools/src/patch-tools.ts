import { isAgentFsError } from '@agentfs/core'
import type { FileSystem } from '@agentfs/fs'
import { z } from 'zod'
import { applyHunks } from './edit/patch-apply.js'
import { type FilePatch, parseAnyPatch } from './edit/patch-parse.js'
import { ToolFailure } from './failure.js'
import { dirnameOf } from './posix.js'
import { isText } from './text.js'
import { inTransaction } from './transaction.js'
import type { AgentToolDefinition, ToolEnvironment } from './types.js'

/** What a file is, as the patch has left it so far: its text (undefined: absent) and its version. */
interface Planned {
  text: string | undefined
  /** The version it had when read (undefined: it did not exist). */
  readonly version: string | undefined
  readonly display: string
}

async function current(env: ToolEnvironment, fsPath: string, display: string): Promise<Planned> {
  const stats = await env.fs.lstat(fsPath).catch((error: unknown) => {
    if (isAgentFsError(error, 'ENOENT')) return undefined
    throw error
  })
  if (stats === undefined) return { text: undefined, version: undefined, display }
  if (!stats.isFile())
    throw new ToolFailure(
      stats.isDirectory() ? 'EISDIR' : 'EINVAL',
      `Error: ${display} is ${stats.isDirectory() ? 'a directory' : 'not a regular file'}; a patch changes regular files only. Nothing was changed.`,
    )
  const bytes = await env.fs.readFile(fsPath)
  if (!isText(bytes))
    throw new ToolFailure(
      'EBINARY',
      `Error: ${display} is a binary file; a patch cannot change it. Nothing was changed.`,
    )
  return { text: bytes.toString('utf8'), version: stats.version, display }
}

const applyPatch: AgentToolDefinition<{ patch?: string | undefined; input?: string | undefined }> =
  {
    name: 'apply_patch',
    description: [
      'Apply a patch to one or more files, all or nothing: every hunk is checked first, then all files change in one transaction (or none does).',
      'Two formats. A unified diff (`--- a/path`, `+++ b/path`, `@@ -l,n +l,n @@` hunks; `/dev/null` to add or delete a file), as `git diff` prints it. Or:',
      '*** Begin Patch\n*** Update File: /src/app.ts\n@@ function main() {\n-  old line\n+  new line\n*** Add File: /src/new.ts\n+content line\n*** Delete File: /src/old.ts\n*** End Patch',
      '(`*** Move to: path` after an Update File line renames it; `@@ text` finds that line first; ` ` context, `-` removed and `+` added lines; `*** End of File` ends a hunk at the file end.)',
      "Context lines are found even where line endings, trailing whitespace, tabs vs spaces or look-alike characters differ, when only one place fits. A hunk that does not apply is refused with the file's closest text.",
    ].join('\n'),
    inputSchema: z
      .object({
        patch: z.string().optional().describe('The patch text, in either format'),
        input: z.string().optional().describe('Alias of patch'),
      })
      .refine((v) => (v.patch ?? v.input) !== undefined, { message: 'patch is required' }),
    mutates: true,
    needs: 'fs',
    async handler(input, env, limits) {
      const files = parseAnyPatch((input.patch ?? input.input)!)
      // Every path is resolved (and refused by the policy) before anything is read or written.
      const resolved = new Map<string, string>()
      for (const f of files)
        for (const p of [f.path, f.kind === 'update' ? f.moveTo : undefined])
          if (p !== undefined && !resolved.has(p))
            resolved.set(p, await env.paths.resolve(p, env.fs))
      const plan = new Map<string, Planned>()
      const state = async (fsPath: string) => {
        let s = plan.get(fsPath)
        if (s === undefined) {
          s = await current(env, fsPath, env.paths.display(fsPath))
          plan.set(fsPath, s)
        }
        return s
      }
      const summary: string[] = []
      const tolerated = new Set<string>()
      const moves: Array<{ from: string; to: string }> = []
      for (const f of files as FilePatch[]) {
        const fsPath = resolved.get(f.path)!
        const s = await state(fsPath)
        const refuse = (code: string, why: string) =>
          new ToolFailure(code, `Error: ${s.display} ${why}. Nothing was changed.`)
        if (f.kind === 'add') {
          if (s.text !== undefined)
            throw refuse(
              'EEXIST',
              'already exists; change it with *** Update File (or a diff against it)',
            )
          s.text = f.content
          summary.push(`A ${s.display}`)
        } else if (f.kind === 'delete') {
          if (s.text === undefined)
            throw refuse('ENOENT', 'does not exist, so it cannot be deleted')
          s.text = undefined
          summary.push(`D ${s.display}`)
        } else {
          if (s.text === undefined)
            throw refuse(
              'ENOENT',
              'does not exist; add it with *** Add File (or a diff from /dev/null)',
            )
          const out = applyHunks(s.text, f.hunks, s.display, limits.maxLineLength)
          for (const t of out.tolerances) tolerated.add(`${s.display}: ${t}`)
          if (f.moveTo !== undefined && resolved.get(f.moveTo) !== fsPath) {
            const to = resolved.get(f.moveTo)!
            const d = await state(to)
            if (d.text !== undefined)
              throw new ToolFailure(
                'EEXIST',
                `Error: cannot move ${s.display} to ${d.display}: it already exists. Nothing was changed.`,
              )
            d.text = out.text
            s.text = undefined
            moves.push({ from: fsPath, to })
            summary.push(`R ${s.display} → ${d.display} (${f.hunks.length} hunk(s))`)
          } else {
            s.text = out.text
            summary.push(`M ${s.display} (${f.hunks.length} hunk(s))`)
          }
        }
      }
      await inTransaction(env.fs, async (fs: FileSystem) => {
        // Nothing read above may have changed since: the versions are checked in the transaction.
        for (const [fsPath, s] of plan) {
          const now = await fs.lstat(fsPath).then(
            (st) => st.version,
            (error: unknown) => {
              if (isAgentFsError(error, 'ENOENT')) return undefined
              throw error
            },
          )
          if (now !== s.version)
            throw new ToolFailure(
              'STALE',
              `Error: ${s.display} changed while the patch was being checked (version ${s.version ?? '(absent)'}, now ${now ?? '(deleted)'}). Read it again and make the patch against it. Nothing was changed.`,
            )
        }
        // Renames first, so a moved file keeps its identity (and history); then the writes.
        for (const m of moves) {
          await fs.mkdir(dirnameOf(m.to), { recursive: true })
          await fs.rename(m.from, m.to)
        }
        const moved = new Set(moves.map((m) => m.from))
        for (const [fsPath, s] of plan) {
          if (s.text === undefined) {
            if (s.version !== undefined && !moved.has(fsPath)) await fs.unlink(fsPath)
            continue
          }
          await fs.mkdir(dirnameOf(fsPath), { recursive: true })
          await fs.writeFile(fsPath, s.text)
        }
      })
      const versions: Record<string, string> = {}
      for (const [fsPath, s] of plan)
        if (s.text !== undefined) versions[s.display] = (await env.fs.stat(fsPath)).version
      return {
        text: `Applied the patch:\n${summary.map((l) => `  ${l}`).join('\n')}${
          tolerated.size > 0
            ? `\nContext found only with tolerance (added lines written in each file's style): ${[...tolerated].join('; ')}`
            : ''
        }\n${Object.entries(versions)
          .map(([p, v]) => `  ${p} [version: ${v}]`)
          .join('\n')}`,
        data: { files: summary, versions, tolerances: [...tolerated] },
      }
    },
  }

export const PATCH_TOOLS = [applyPatch] as const
