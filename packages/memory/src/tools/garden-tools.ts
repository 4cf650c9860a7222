import { posix } from 'node:path'
import type { AgentToolDefinition, AnyAgentToolDefinition } from '@agentfs/agent-tools'
import { FsError, unifiedDiff } from '@agentfs/core'
import { z } from 'zod'
import { MemoryError } from '../errors.js'
import { canonicalHash } from '../events/event.js'
import { type CurateOp, curateList } from '../markdown/curate.js'
import { checkEdit } from '../markdown/guard.js'
import { lintDocument } from '../markdown/lint.js'
import { patchSection } from '../markdown/patch-section.js'
import { applyUnifiedDiff } from '../markdown/unified-patch.js'
import {
  gardenFile,
  type MemoryContext,
  oneLine,
  readText,
  stillHere,
  userPath,
} from './context.js'
import { sagaWrite } from './saga.js'
import { type GardenWrite, runWrite, writeMetaSchema } from './write-tools.js'

/** Matches `fs_search` returns at most. */
const MAX_SEARCH_MATCHES = 200
/** Entries `fs_list` returns at most. */
const MAX_LIST = 1000

export function gardenTools(ctx: MemoryContext): AnyAgentToolDefinition[] {
  const list: AgentToolDefinition<{ path?: string | undefined; glob?: string | undefined }> = {
    name: 'fs_list',
    description:
      "Lists the files of the user's garden below path (default: the user's folder), optionally only those matching a glob (`*`, `**`, `?`, `{a,b}`), with sizes.",
    inputSchema: z.object({ path: z.string().optional(), glob: z.string().max(1000).optional() }),
    mutates: false,
    needs: 'fs',
    async handler(input, env) {
      const root = await userPath(ctx, env, input.path || ctx.garden.userDir)
      const found = await env.fs.glob(input.glob ?? '**', { cwd: root, onlyFiles: true })
      const files = found
        .slice(0, MAX_LIST)
        .map((f) => ({ path: env.paths.display(f.path), size: f.size }))
      return {
        text:
          files.length === 0
            ? 'No files.'
            : `${files.map((f) => `${f.path}\t${f.size}`).join('\n')}${found.length > MAX_LIST ? `\n(truncated: ${found.length} files, the first ${MAX_LIST} shown; narrow the glob)` : ''}`,
        data: { files, truncated: found.length > MAX_LIST },
      }
    },
  }

  const search: AgentToolDefinition<{
    root?: string | undefined
    pattern: string
    glob?: string | undefined
    ignore_case?: boolean | undefined
    fixed_strings?: boolean | undefined
    max_matches?: number | undefined
  }> = {
    name: 'fs_search',
    description:
      "Searches the garden's files for a regular expression (RE2 syntax: no backreferences or lookaround) and returns {path, line, match} for each matching line.",
    inputSchema: z.object({
      root: z.string().optional(),
      pattern: z.string().min(1).max(1000),
      glob: z.string().max(1000).optional(),
      ignore_case: z.boolean().optional(),
      fixed_strings: z.boolean().optional(),
      max_matches: z.number().int().min(1).max(MAX_SEARCH_MATCHES).optional(),
    }),
    mutates: false,
    needs: 'fs',
    async handler(input, env) {
      const root = await userPath(ctx, env, input.root || ctx.garden.userDir)
      const max = input.max_matches ?? 100
      const matches = await env.fs.grep(input.pattern, {
        path: root,
        maxMatches: max + 1,
        timeoutMs: 10_000,
        maxBytes: 256 << 20,
        ...(input.glob ? { glob: input.glob } : {}),
        ...(input.ignore_case ? { ignoreCase: true } : {}),
        ...(input.fixed_strings ? { fixedStrings: true } : {}),
      })
      // grep reads only regular files of the tree below `root` and follows no link, so every
      // match is a file of the user's folder.
      const rows = matches.slice(0, max).map((m) => ({
        path: env.paths.display(m.path),
        line: m.line,
        match: m.text.slice(0, 500),
      }))
      return {
        text:
          rows.length === 0
            ? 'No matches.'
            : rows.map((r) => `${r.path}:${r.line}: ${r.match}`).join('\n'),
        data: { matches: rows, truncated: matches.length > max },
      }
    },
  }

  const ensureDir: AgentToolDefinition<{ path: string }> = {
    name: 'fs_ensure_dir',
    description:
      "Makes a folder of the garden (and its parents) if it is missing, e.g. /users/u1/parts/p2 before a new part's profile.",
    inputSchema: z.object({ path: z.string() }),
    mutates: true,
    idempotent: false,
    needs: 'fs',
    async handler(input, env) {
      const dir = await userPath(ctx, env, input.path || ctx.garden.userDir)
      // Only folders a garden file can sit in: a prefix of an allowed template's folder.
      const probe = ctx.garden.templates.some((t) => {
        const parts = posix
          .join(ctx.garden.root, t.replaceAll('{userId}', ctx.garden.userId))
          .split('/')
        const want = dir.split('/')
        return (
          want.length < parts.length &&
          want.every(
            (seg, i) =>
              parts[i] === seg ||
              (/^\{[A-Za-z][A-Za-z0-9]*\}$/.test(parts[i]!) &&
                /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/.test(seg)),
          )
        )
      })
      if (!probe && dir !== ctx.garden.userDir)
        throw new MemoryError('BLOCKED', `${input.path} is not a folder garden files go in`)
      if (env.readOnly) throw new MemoryError('BLOCKED', 'the filesystem is read-only here')
      await env.fs.mkdir(dir, { recursive: true })
      return { text: `${env.paths.display(dir)} exists.`, data: { path: dir } }
    },
  }

  const patch: AgentToolDefinition<GardenWrite & { path: string; diff_text: string }> = {
    name: 'fs_patch',
    description:
      'Applies a unified diff (---/+++ headers optional, @@ hunks with context) to a garden file, exactly: a hunk whose lines are not where it says is refused, naming it, and nothing is written. Returns new_hash.',
    inputSchema: z.object({ path: z.string(), diff_text: z.string().min(1), ...writeMetaSchema }),
    mutates: true,
    idempotent: false,
    needs: 'fs',
    handler: (input, env) =>
      runWrite(ctx, env, 'fs_patch', input, 'patch', undefined, (before) => {
        if (before === null)
          throw new MemoryError('NOT_FOUND', `${input.path} does not exist; fs_write creates files`)
        return { after: applyUnifiedDiff(before, input.diff_text) }
      }),
  }

  const curate: AgentToolDefinition<
    GardenWrite & { path: string; section_anchor: string; ops: CurateOp[]; reason: string }
  > = {
    name: 'md_curate_list',
    description:
      "Curates the list in an anchored section (e.g. 'evidence v1'): append an item, prune one (by its text, or a unique part of it), or merge several into one. One-line reason required.",
    inputSchema: z.object({
      path: z.string(),
      section_anchor: z.string(),
      ops: z
        .array(
          z.discriminatedUnion('op', [
            z.object({ op: z.literal('append'), item: z.string() }),
            z.object({ op: z.literal('prune'), item: z.string() }),
            z.object({
              op: z.literal('merge'),
              items: z.array(z.string()).min(2).max(50),
              into: z.string(),
            }),
          ]),
        )
        .min(1)
        .max(50),
      reason: z.string().min(1).max(500),
      ...writeMetaSchema,
    }),
    mutates: true,
    idempotent: false,
    needs: 'fs',
    handler: (input, env) => {
      const kinds = [...new Set(input.ops.map((o) => o.op))]
      const op = kinds.length === 1 ? `${kinds[0]}_item` : 'curate_list'
      return runWrite(
        ctx,
        env,
        'md_curate_list',
        { ...input, rationale: input.rationale ?? input.reason },
        op,
        input.section_anchor,
        (before) => {
          if (before === null) throw new MemoryError('NOT_FOUND', `${input.path} does not exist`)
          return { after: curateList(before, input.section_anchor, input.ops) }
        },
      )
    },
  }

  const propose: AgentToolDefinition<{
    path: string
    content?: string | undefined
    diff_text?: string | undefined
    section_anchor?: string | undefined
    replace?: string | undefined
    append?: string | undefined
  }> = {
    name: 'propose_change',
    description:
      'A dry run: shows the diff a change would make (whole content, a unified diff, or a section replace/append) and what the hard blocks and lint would say. Changes nothing.',
    inputSchema: z.object({
      path: z.string(),
      content: z.string().optional(),
      diff_text: z.string().optional(),
      section_anchor: z.string().optional(),
      replace: z.string().optional(),
      append: z.string().optional(),
    }),
    mutates: false,
    needs: 'fs',
    async handler(input, env) {
      const file = await gardenFile(ctx, env, input.path)
      const before = await readText(env.fs, file.path)
      const kinds = [input.content, input.diff_text, input.section_anchor].filter(
        (v) => v !== undefined,
      )
      if (kinds.length !== 1)
        throw new MemoryError(
          'INVALID_ARGUMENT',
          'give one of content, diff_text, or section_anchor with replace or append',
        )
      let after: string
      if (input.content !== undefined) after = input.content
      else if (before === null) throw new MemoryError('NOT_FOUND', `${input.path} does not exist`)
      else if (input.diff_text !== undefined) after = applyUnifiedDiff(before, input.diff_text)
      else {
        if ((input.replace === undefined) === (input.append === undefined))
          throw new MemoryError(
            'INVALID_ARGUMENT',
            'with section_anchor, give exactly one of replace or append',
          )
        after = patchSection(
          before,
          input.section_anchor!,
          input.replace === undefined ? { append: input.append! } : { replace: input.replace },
        )
      }
      const blocks = checkEdit(before, after)
      const lint = lintDocument(after, ctx.options.lint ?? {})
      const diff = unifiedDiff(`a${file.path}`, `b${file.path}`, before ?? '', after).text
      const report = [
        blocks.blocked ? `BLOCKED: ${blocks.reasons.join('; ')}` : 'No hard block.',
        lint.caps_exceeded
          ? 'A lint cap is passed: the write needs an override_rationale.'
          : 'No cap passed.',
        ...lint.warnings.map((w) => `warning: ${w}`),
      ].join('\n')
      return {
        text: `${diff || '(no change)'}\n\n${report}`,
        data: {
          diff,
          safety_report: report,
          requires_approval: false,
          blocked: blocks.blocked,
          caps_exceeded: lint.caps_exceeded,
        },
      }
    },
  }
  const move: AgentToolDefinition<GardenWrite & { path: string; new_path: string }> = {
    name: 'fs_move',
    description:
      'Maintainer only: moves a garden file to another garden path (refused when something is there already).',
    inputSchema: z.object({ path: z.string(), new_path: z.string(), ...writeMetaSchema }),
    mutates: true,
    idempotent: false,
    needs: 'fs',
    async handler(input, env) {
      const from = await gardenFile(ctx, env, input.path)
      const to = await gardenFile(ctx, env, input.new_path)
      const out = await sagaWrite(
        ctx,
        env,
        {
          type: 'maintenance',
          op: 'move',
          tool: 'fs_move',
          file_path: from.path,
          rationale: oneLine('rationale', input.rationale) ?? null,
        },
        input.idempotency_key ? { idempotency_key: input.idempotency_key } : {},
        { path: from.path, new_path: to.path },
        async (fs) => {
          await stillHere(fs, from.path)
          await stillHere(fs, to.path)
          const text = await readText(fs, from.path)
          if (text === null) throw new MemoryError('NOT_FOUND', `${input.path} does not exist`)
          if (await fs.exists(to.path))
            throw new FsError({
              code: 'EEXIST',
              syscall: 'rename',
              path: to.path,
              hint: 'move it to a free garden path',
            })
          await fs.mkdir(posix.dirname(to.path), { recursive: true })
          await fs.rename(from.path, to.path)
          const h = canonicalHash(text)
          return {
            value: { new_path: to.path },
            event: { before_hash: h, intended_hash: h },
            after_hash: h,
            line_hash: null,
          }
        },
      )
      return {
        text: `${out.replayed ? 'Already moved: ' : ''}${env.paths.display(from.path)} → ${env.paths.display(out.value.new_path)}; event ${out.event_id}`,
        data: { new_path: out.value.new_path, event_id: out.event_id },
        ...(out.replayed ? { replayed: true } : {}),
      }
    },
  }
  return [list, search, ensureDir, patch, curate, propose, ...(ctx.options.allowMove ? [move] : [])]
}
