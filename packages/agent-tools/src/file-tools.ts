import { createHash } from 'node:crypto'
import { isAgentFsError } from '@agentfs/core'
import { hashFile } from '@agentfs/fs'
import { z } from 'zod'
import { applyEdits, type PlannedEdit } from './edit/apply-edits.js'
import { ToolFailure } from './failure.js'
import { pdfText, sniffMedia } from './media.js'
import { mergeStaleWrite } from './merge.js'
import { dirnameOf } from './posix.js'
import { type ReadFileInput, readFileSchema, readTextContent } from './read-file.js'
import { isText, numbered, shortDiff, splitLines } from './text.js'
import { inTransaction } from './transaction.js'
import type { AgentToolDefinition, ToolEnvironment } from './types.js'

/** How long and how much heap extracting a PDF's text may take. */
const PDF_LIMITS = { timeoutMs: 20_000, maxHeapMb: 256 }

const staleText = (expected: string, current: string, diff: string) =>
  `File has been modified since read (version ${expected}, now ${current}). Read it again before attempting to write it.\n` +
  `Changes between the file now and what you tried to write:\n${diff}`

/** The stats of a file to read; a directory is refused with a pointer to list_directory. */
async function fileStats(env: ToolEnvironment, fsPath: string, display: string) {
  const stats = await env.fs.stat(fsPath)
  if (stats.isDirectory())
    throw new ToolFailure(
      'EISDIR',
      `Error: ${display} is a directory. Use list_directory to see its entries.`,
    )
  return stats
}

export async function readText(
  env: ToolEnvironment,
  fsPath: string,
  display: string,
): Promise<{ text: string; version: string }> {
  const stats = await fileStats(env, fsPath, display)
  const bytes = await env.fs.readFile(fsPath)
  if (!isText(bytes))
    throw new ToolFailure(
      'EBINARY',
      `Error: ${display} is a binary file (${bytes.length} bytes) and cannot be edited as text.`,
    )
  return { text: bytes.toString('utf8'), version: stats.version }
}

async function checkExpected(
  env: ToolEnvironment,
  fsPath: string,
  display: string,
  expected: string | undefined,
  intended: string,
) {
  if (expected === undefined) return
  const stats = await env.fs.stat(fsPath).catch(() => undefined)
  const current = stats?.version ?? '(deleted)'
  if (current === expected) return
  const now = stats ? (await env.fs.readFile(fsPath)).toString('utf8') : ''
  throw new ToolFailure('STALE', staleText(expected, current, shortDiff(display, now, intended)))
}

/** A few numbered lines around `line`, to show an edit in context. */
function context(text: string, line: number, span: number, maxLineLength: number): string {
  const lines = splitLines(text)
  const from = Math.max(1, line - 3)
  const to = Math.min(lines.length, line + span + 2)
  return numbered(lines.slice(from - 1, to), from, maxLineLength)
}

const readFile: AgentToolDefinition<ReadFileInput> = {
  name: 'read_file',
  description:
    "Read a text file. Returns its lines numbered like `cat -n` (number, tab, line), at most 2000 lines from `offset` (1-based; default 1), and the file's version token. `ranges` reads several line ranges in one call. A line longer than 2000 characters is cut, with a `continuation` token that reads on inside it; `byte_offset`/`byte_limit` read raw text by bytes (huge single-line files), also with a token to continue. Pass the version as expected_version to write_file/edit_file so your edit is refused if the file changed meanwhile. Binary files are described, not dumped.",
  inputSchema: readFileSchema,
  mutates: false,
  needs: 'fs',
  async handler(input, env, limits) {
    const fsPath = await env.paths.resolve(input.path, env.fs)
    const display = env.paths.display(fsPath)
    const stats = await fileStats(env, fsPath, display)
    const bytes = await env.fs.readFile(fsPath)
    const media = sniffMedia(bytes)
    const data = { version: stats.version, size: stats.size }
    if (media?.startsWith('image/')) {
      const sha256 = `sha256:${createHash('sha256').update(bytes).digest('hex')}`
      if (bytes.length > limits.maxImageBytes)
        return {
          text: `${display} is an image (${media}, ${bytes.length} bytes), larger than the ${limits.maxImageBytes} bytes an answer may carry; it is not shown. [version: ${stats.version}] [${sha256}]`,
          data: { ...data, mediaType: media, sha256 },
        }
      return {
        text: `${display} is an image (${media}, ${bytes.length} bytes), attached for you to see. [version: ${stats.version}] [${sha256}]`,
        data: { ...data, mediaType: media, sha256 },
        images: [{ data: bytes.toString('base64'), mediaType: media }],
      }
    }
    if (media === 'application/pdf') {
      if (bytes.length > limits.maxPdfBytes)
        throw new ToolFailure(
          'EFBIG',
          `Error: ${display} is a PDF of ${bytes.length} bytes, more than the ${limits.maxPdfBytes} bytes whose text read_file extracts.`,
        )
      const pdf = await pdfText(bytes, PDF_LIMITS)
      const text = pdf.text.map((t, i) => `--- page ${i + 1} of ${pdf.pages} ---\n${t}`).join('\n')
      const out = readTextContent(input, env, limits, fsPath, text, stats.version)
      return {
        ...out,
        text: `${display} is a PDF of ${pdf.pages} page(s); its text, by lines:\n${out.text}`,
        data: { ...out.data, mediaType: media, pages: pdf.pages },
      }
    }
    if (!isText(bytes))
      return {
        text: `${display} is a binary file (${bytes.length} bytes); its contents are not shown. [version: ${stats.version}]`,
        data,
      }
    return readTextContent(input, env, limits, fsPath, bytes, stats.version)
  },
}

const writeFile: AgentToolDefinition<{
  path: string
  content: string
  expected_version?: string | undefined
  merge?: boolean | undefined
}> = {
  name: 'write_file',
  description:
    'Create or overwrite a text file with `content`; missing parent directories are created. With expected_version (from read_file), the write is refused if the file changed since you read it — unless merge is true: then your changes and the ones made since are merged line by line (against the version you read), and where both changed the same lines the answer is a merge_conflict showing yours, what you read and the current text, to resolve and write again with the current version.',
  inputSchema: z.object({
    path: z.string().describe('Absolute path of the file'),
    content: z.string().describe('The complete new content'),
    expected_version: z.string().optional().describe('Version token from read_file'),
    merge: z
      .boolean()
      .optional()
      .describe('With expected_version: merge with changes made since instead of refusing'),
  }),
  mutates: true,
  needs: 'fs',
  async handler(input, env) {
    const fsPath = await env.paths.resolve(input.path, env.fs)
    const display = env.paths.display(fsPath)
    try {
      // The parents and the file in one transaction: a write the policy refuses makes nothing.
      await inTransaction(env.fs, async (fs) => {
        await fs.mkdir(dirnameOf(fsPath), { recursive: true })
        await fs.writeFile(
          fsPath,
          input.content,
          input.expected_version === undefined ? {} : { ifMatch: input.expected_version },
        )
      })
    } catch (error) {
      if (
        isAgentFsError(error, 'CONFLICT') &&
        input.merge &&
        input.expected_version !== undefined
      ) {
        const { version, merged } = await mergeStaleWrite(
          env,
          fsPath,
          display,
          input.expected_version,
          input.content,
        )
        const sha256 = sha256Of(merged)
        return {
          text: `${display} changed since you read it (version ${input.expected_version}); your changes were merged with those and ${Buffer.byteLength(merged)} bytes written. Read it again to see the result. [version: ${version}] [${sha256}]`,
          data: { version, sha256, merged: true },
        }
      }
      if (isAgentFsError(error, 'CONFLICT'))
        await checkExpected(env, fsPath, display, input.expected_version, input.content)
      throw error
    }
    const { version } = await env.fs.stat(fsPath)
    const sha256 = sha256Of(input.content)
    return {
      text: `Wrote ${Buffer.byteLength(input.content)} bytes to ${display}. [version: ${version}] [${sha256}]`,
      data: { version, sha256 },
    }
  },
}

const editSchema = z
  .object({
    path: z.string().describe('Absolute path of the file'),
    old_string: z
      .string()
      .optional()
      .describe('Exact text to replace (must occur once unless replace_all)'),
    new_string: z.string().optional().describe('Replacement text'),
    old_str: z.string().optional().describe('Alias of old_string'),
    new_str: z.string().optional().describe('Alias of new_string'),
    replace_all: z.boolean().optional().describe('Replace every occurrence'),
    expected_version: z.string().optional().describe('Version token from read_file'),
  })
  .refine(
    (v) => (v.old_string ?? v.old_str) !== undefined && (v.new_string ?? v.new_str) !== undefined,
    {
      message: 'old_string and new_string are required',
    },
  )

type EditInput = z.infer<typeof editSchema>

const editFile: AgentToolDefinition<EditInput> = {
  name: 'edit_file',
  description:
    'Replace exact text in a file. `old_string` must occur exactly once (add surrounding lines to make it unique) unless replace_all is true. Returns the edited region with line numbers and the new version. Accepts old_str/new_str too.',
  inputSchema: editSchema,
  mutates: true,
  needs: 'fs',
  async handler(input, env, limits) {
    const fsPath = await env.paths.resolve(input.path, env.fs)
    const display = env.paths.display(fsPath)
    const { text, version } = await readText(env, fsPath, display)
    const edit = {
      old: (input.old_string ?? input.old_str)!,
      replacement: (input.new_string ?? input.new_str)!,
      all: input.replace_all ?? false,
    }
    const result = applyEdits(text, [edit], display, limits.maxLineLength)
    await checkExpected(env, fsPath, display, input.expected_version, result.text)
    try {
      await env.fs.writeFile(fsPath, result.text, { ifMatch: version })
    } catch (error) {
      if (isAgentFsError(error, 'CONFLICT'))
        await checkExpected(env, fsPath, display, version, result.text)
      throw error
    }
    const stats = await env.fs.stat(fsPath)
    const span = edit.replacement.split('\n').length
    const sha256 = sha256Of(result.text)
    const tolerated =
      result.tolerances.length > 0
        ? `\nThe exact text was not in the file; it matched once with ${result.tolerances.join('; ')} tolerated, and your new text was written in the file's style.`
        : ''
    return {
      text: `Edited ${display}:\n${context(result.text, result.firstLine, span, limits.maxLineLength)}${tolerated}\n[version: ${stats.version}] [${sha256}]`,
      data: { version: stats.version, sha256, tolerances: result.tolerances },
    }
  },
}

const multiSchema = z.object({
  path: z
    .string()
    .optional()
    .describe('File the edits apply to (unless an edit names its own path)'),
  edits: z
    .array(
      z.object({
        path: z.string().optional(),
        old_string: z.string().optional(),
        new_string: z.string().optional(),
        old_str: z.string().optional(),
        new_str: z.string().optional(),
        replace_all: z.boolean().optional(),
      }),
    )
    .min(1),
  expected_version: z.string().optional().describe('Version token of `path` from read_file'),
})

const multiEdit: AgentToolDefinition<z.infer<typeof multiSchema>> = {
  name: 'multi_edit',
  description:
    'Several exact-text replacements, in one or more files, applied all or nothing: every edit is checked first (same rules as edit_file, applied in order), then all are written in one transaction.',
  inputSchema: multiSchema,
  mutates: true,
  needs: 'fs',
  async handler(input, env, limits) {
    const byPath = new Map<string, PlannedEdit[]>()
    for (const edit of input.edits) {
      const path = edit.path ?? input.path
      const old = edit.old_string ?? edit.old_str
      const replacement = edit.new_string ?? edit.new_str
      if (path === undefined || old === undefined || replacement === undefined) {
        throw new ToolFailure(
          'EINVAL',
          'Error: every edit needs a path (or a top-level path), old_string and new_string.',
        )
      }
      const fsPath = await env.paths.resolve(path, env.fs)
      byPath.set(fsPath, [
        ...(byPath.get(fsPath) ?? []),
        { old, replacement, all: edit.replace_all ?? false },
      ])
    }
    const planned: Array<{ fsPath: string; text: string; version: string }> = []
    const tolerated = new Set<string>()
    for (const [fsPath, edits] of byPath) {
      const display = env.paths.display(fsPath)
      const { text, version } = await readText(env, fsPath, display)
      const result = applyEdits(text, edits, display, limits.maxLineLength)
      for (const t of result.tolerances) tolerated.add(`${display}: ${t}`)
      if (input.path !== undefined && fsPath === (await env.paths.resolve(input.path, env.fs))) {
        await checkExpected(env, fsPath, display, input.expected_version, result.text)
      }
      planned.push({ fsPath, text: result.text, version })
    }
    const apply = async (fs: ToolEnvironment['fs']) => {
      for (const plan of planned)
        await fs.writeFile(plan.fsPath, plan.text, { ifMatch: plan.version })
    }
    await inTransaction(env.fs, apply)
    const versions: Record<string, string> = {}
    for (const plan of planned)
      versions[env.paths.display(plan.fsPath)] = (await env.fs.stat(plan.fsPath)).version
    return {
      text: `Applied ${input.edits.length} edit(s) to ${planned.length} file(s):\n${Object.entries(
        versions,
      )
        .map(([p, v]) => `  ${p} [version: ${v}]`)
        .join(
          '\n',
        )}${tolerated.size > 0 ? `\nNot found exactly, matched once with tolerance (new text written in the file's style): ${[...tolerated].join('; ')}` : ''}`,
      data: { versions, tolerances: [...tolerated] },
    }
  },
}

/** The hash a write's answer carries: of the bytes written, as `hash` would report them. */
export const sha256Of = (text: string) =>
  `sha256:${createHash('sha256').update(text, 'utf8').digest('hex')}`

const hash: AgentToolDefinition<{ path: string; canonical?: boolean | undefined }> = {
  name: 'hash',
  description:
    "The SHA-256 of a file's content (`sha256:…`), with its version token: compare it with the hash write_file or edit_file returned to know the file is still what you wrote. With canonical, of the text normalised (LF line ends, no trailing whitespace, one final newline), so formatting-only differences hash alike.",
  inputSchema: z.object({
    path: z.string().describe('Absolute path of the file'),
    canonical: z.boolean().optional().describe('Hash the normalised text instead of the bytes'),
  }),
  mutates: false,
  needs: 'fs',
  async handler(input, env) {
    const fsPath = await env.paths.resolve(input.path, env.fs)
    const result = await hashFile(env.fs, fsPath, { canonical: input.canonical === true })
    return {
      text: `${result.hash} ${env.paths.display(fsPath)} (${result.size} bytes${result.canonical ? ', canonical' : ''}) [version: ${result.version}]`,
      data: { ...result },
    }
  },
}

export const FILE_TOOLS = [readFile, writeFile, editFile, multiEdit, hash] as const
