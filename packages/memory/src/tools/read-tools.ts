import { posix } from 'node:path'
import type {
  AgentToolDefinition,
  AnyAgentToolDefinition,
  ToolEnvironment,
} from '@agentfs/agent-tools'
import { toMillis } from '@agentfs/core'
import { z } from 'zod'
import { MemoryError } from '../errors.js'
import { canonicalHash } from '../events/event.js'
import { parseGardenDocument } from '../markdown/document.js'
import { lintDocument } from '../markdown/lint.js'
import { sectionBody } from '../markdown/patch-section.js'
import { gardenFile, type MemoryContext, readText, stillHere, userPath } from './context.js'
import { sagaWrite } from './saga.js'

/** Lines `fs_read` returns per range at most. */
const MAX_RANGE_LINES = 2000

async function text(env: ToolEnvironment, path: string): Promise<string> {
  const t = await readText(env.fs, path)
  if (t === null) throw new MemoryError('NOT_FOUND', `${path} does not exist`)
  return t
}

export function readTools(ctx: MemoryContext): AnyAgentToolDefinition[] {
  const listSections: AgentToolDefinition<{ path: string }> = {
    name: 'md_list_sections',
    description:
      "Lists a garden Markdown file's sections: each H2 heading with its hidden anchor id (the id md_patch_section and fs_hash take) and the line it starts on.",
    inputSchema: z.object({ path: z.string() }),
    mutates: false,
    needs: 'fs',
    async handler(input, env) {
      const path = await userPath(ctx, env, input.path)
      const doc = parseGardenDocument(await text(env, path))
      const sections = doc.sections.map((s) => ({
        anchor: s.anchor,
        heading: s.heading,
        start_line: s.start_line,
      }))
      return {
        text:
          sections.length === 0
            ? `${input.path} has no H2 sections.`
            : sections
                .map((s) => `${s.anchor ?? '(no anchor)'}\t## ${s.heading}\tline ${s.start_line}`)
                .join('\n'),
        data: { sections },
      }
    },
  }

  const read: AgentToolDefinition<{
    path: string
    ranges?: { start: number; end: number }[] | undefined
  }> = {
    name: 'fs_read',
    description:
      "Reads a file of the user's garden, whole or as line ranges (1-based, inclusive; several in one call). Returns the text and the file's hash (for fs_write's if_match).",
    inputSchema: z.object({
      path: z.string(),
      ranges: z
        .array(z.object({ start: z.number().int().min(1), end: z.number().int().min(1) }))
        .max(20)
        .optional(),
    }),
    mutates: false,
    needs: 'fs',
    async handler(input, env) {
      const path = await userPath(ctx, env, input.path)
      const t = await text(env, path)
      const hash = canonicalHash(t)
      if (!input.ranges) return { text: t, data: { hash } }
      const lines = t.split('\n')
      const slices = input.ranges.map(({ start, end }) => {
        if (end < start)
          throw new MemoryError('INVALID_ARGUMENT', `range ${start}-${end} ends before it starts`)
        const last = Math.min(end, start + MAX_RANGE_LINES - 1, lines.length)
        return { start, end: last, text: lines.slice(start - 1, last).join('\n') }
      })
      return {
        text: slices.map((s) => `--- lines ${s.start}-${s.end}\n${s.text}`).join('\n'),
        data: { hash, slices },
      }
    },
  }

  const hash: AgentToolDefinition<{ path: string; section_anchor?: string | undefined }> = {
    name: 'fs_hash',
    description:
      "The canonical SHA-256 of a garden file (LF line ends, trailing whitespace trimmed, one final newline), or of one anchored section's text with section_anchor.",
    inputSchema: z.object({ path: z.string(), section_anchor: z.string().optional() }),
    mutates: false,
    needs: 'fs',
    async handler(input, env) {
      const path = await userPath(ctx, env, input.path)
      const t = await text(env, path)
      const h = canonicalHash(
        input.section_anchor ? sectionBody(parseGardenDocument(t), input.section_anchor) : t,
      )
      return { text: h, data: { hash: h } }
    },
  }

  const lintTool = (
    name: 'md_lint' | 'lint_check',
  ): AgentToolDefinition<{ path: string; content?: string | undefined }> => ({
    name,
    description:
      name === 'md_lint'
        ? 'Lints a garden Markdown file (or, with content, a proposed new text of it): warnings (evidence over 7 items, long sections, non-canonical headings, format drift) and whether the edit would be blocked (anchors, identity frontmatter).'
        : 'md_lint with a severity per finding (block, cap: needs an override_rationale, warn), as events record it.',
    inputSchema: z.object({ path: z.string(), content: z.string().optional() }),
    mutates: false,
    needs: 'fs',
    async handler(input, env) {
      const path = await userPath(ctx, env, input.path)
      const current = await readText(env.fs, path)
      const subject = input.content ?? current
      if (subject === null) throw new MemoryError('NOT_FOUND', `${input.path} does not exist`)
      const result = lintDocument(subject, {
        ...ctx.options.lint,
        ...(input.content === undefined ? {} : { before: current }),
      })
      const findings = [
        ...(result.blocked_reasons ?? []).map((message) => ({ severity: 'block', message })),
        ...result.diagnostics.map((d) => ({
          severity: d.cap ? 'cap' : 'warn',
          code: d.code,
          message: d.message,
          ...(d.fix ? { fix: d.fix } : {}),
        })),
      ]
      return {
        text:
          findings.length === 0
            ? 'No warnings.'
            : findings
                .map((f) => `${name === 'lint_check' ? `[${f.severity}] ` : ''}${f.message}`)
                .join('\n'),
        data: {
          warnings: result.warnings,
          blocked: result.blocked,
          ...(result.blocked_reasons ? { blocked_reasons: result.blocked_reasons } : {}),
          caps_exceeded: result.caps_exceeded,
          ...(name === 'lint_check' ? { diagnostics: findings } : {}),
        },
      }
    },
  })

  const snapshot: AgentToolDefinition<{ path: string; idempotency_key?: string | undefined }> = {
    name: 'md_snapshot_history',
    description:
      "Writes a timestamped copy of a garden file under the user's .history folder (profile edits make one by themselves). Returns history_path.",
    inputSchema: z.object({
      path: z.string(),
      idempotency_key: z.string().max(256).optional(),
    }),
    mutates: true,
    idempotent: false,
    needs: 'fs',
    async handler(input, env) {
      const file = await gardenFile(ctx, env, input.path)
      const current = await text(env, file.path)
      const out = await sagaWrite(
        ctx,
        env,
        {
          type: 'history',
          op: 'snapshot_history',
          tool: 'md_snapshot_history',
          file_path: file.path,
        },
        input.idempotency_key ? { idempotency_key: input.idempotency_key } : {},
        { path: file.path, hash: canonicalHash(current) },
        async (fs) => {
          await stillHere(fs, file.path)
          const now = await fs.readFile(file.path, 'utf8')
          const history_path = ctx.garden.historyPath(
            file.path,
            new Date(toMillis(ctx.clock.now())),
          )
          await fs.mkdir(posix.dirname(history_path), { recursive: true })
          await fs.writeFile(history_path, now, { flag: 'wx' })
          const h = canonicalHash(now)
          return {
            value: { history_path },
            event: { before_hash: h, intended_hash: h },
            after_hash: h,
            line_hash: null,
          }
        },
      )
      return {
        text: `${out.replayed ? 'Already taken: ' : ''}history copy at ${env.paths.display(out.value.history_path)}; event ${out.event_id}`,
        data: { history_path: out.value.history_path, event_id: out.event_id },
        ...(out.replayed ? { replayed: true } : {}),
      }
    },
  }
  return [listSections, read, hash, lintTool('md_lint'), lintTool('lint_check'), snapshot]
}
