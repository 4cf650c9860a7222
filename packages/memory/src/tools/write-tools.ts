import type {
  AgentToolDefinition,
  AnyAgentToolDefinition,
  ToolEnvironment,
  ToolOutput,
} from '@agentfs/agent-tools'
import { z } from 'zod'
import { MemoryError } from '../errors.js'
import { canonicalHash } from '../events/event.js'
import { patchSection } from '../markdown/patch-section.js'
import { commitText, eventType, type TextResult } from './commit-text.js'
import { gardenFile, type MemoryContext, oneLine, readText, stillHere } from './context.js'
import { sagaWrite, type WriteMeta } from './saga.js'

/** The fields every write takes besides its own. */
export const writeMetaSchema = {
  rationale: z.string().optional().describe('One line: why this change (recorded in the event).'),
  override_rationale: z
    .string()
    .optional()
    .describe(
      'One line, required when the result passes a lint cap (evidence > 7 items, a long section); recorded in the event and the Change Log.',
    ),
  evidence_refs: z
    .array(z.string().max(200))
    .max(50)
    .optional()
    .describe('Evidence tokens (ev:…) this change rests on.'),
  agent_action_id: z
    .string()
    .max(200)
    .optional()
    .describe('Your id for the action this write belongs to.'),
  idempotency_key: z
    .string()
    .max(256)
    .optional()
    .describe(
      'A key for this request: a retry with the same key and input changes nothing and gets the first answer.',
    ),
  type: z
    .string()
    .max(64)
    .optional()
    .describe(
      'Event type (default from the file: profile_update, relationship_update, observation).',
    ),
}

/** What {@link writeMetaSchema} parses to. */
export type GardenWrite = {
  rationale?: string | undefined
  override_rationale?: string | undefined
  evidence_refs?: string[] | undefined
  agent_action_id?: string | undefined
  idempotency_key?: string | undefined
  type?: string | undefined
}

function writeMeta(input: GardenWrite): WriteMeta {
  const rationale = oneLine('rationale', input.rationale)
  const override = oneLine('override_rationale', input.override_rationale)
  return {
    ...(rationale === undefined ? {} : { rationale }),
    ...(override === undefined ? {} : { override_rationale: override }),
    ...(input.evidence_refs ? { evidence_refs: input.evidence_refs } : {}),
    ...(input.agent_action_id ? { agent_action_id: input.agent_action_id } : {}),
    ...(input.idempotency_key ? { idempotency_key: input.idempotency_key } : {}),
  }
}

/** The payload a scope key hashes: the input without what does not change the request. */
function payloadOf(input: Record<string, unknown>): unknown {
  const { idempotency_key: _k, agent_action_id: _a, ...rest } = input
  return rest
}

function answer(
  tool: string,
  path: string,
  out: { value: TextResult; event_id: string; replayed: boolean },
) {
  const v = out.value
  const lines = [
    `${out.replayed ? 'Already applied (same request); nothing changed. ' : ''}${tool}: ${path} is now ${v.after_hash}${v.before_hash ? ` (was ${v.before_hash})` : ' (new file)'}; event ${out.event_id}.`,
    ...(v.history_path ? [`History copy: ${v.history_path}`] : []),
    ...(v.change_log ? [`Change Log: ${v.change_log}`] : []),
    ...(v.warnings.length > 0 ? ['Lint warnings:', ...v.warnings.map((w) => `- ${w}`)] : []),
  ]
  return {
    text: lines.join('\n'),
    data: { ...v, new_hash: v.after_hash, event_id: out.event_id },
    ...(out.replayed ? { replayed: true } : {}),
  }
}

/**
 * Runs a write of a garden file under the saga (see `sagaWrite`): `compute` turns the file's
 * text (null: absent) into the new text inside the transaction; `commitText` checks and writes.
 */
export async function runWrite(
  ctx: MemoryContext,
  env: ToolEnvironment,
  tool: string,
  input: GardenWrite & { path: string } & Record<string, unknown>,
  op: string,
  anchor: string | undefined,
  compute: (before: string | null) => { after: string; append?: boolean; material?: boolean },
): Promise<ToolOutput> {
  const file = await gardenFile(ctx, env, input.path)
  const m = writeMeta(input)
  const out = await sagaWrite(
    ctx,
    env,
    {
      type: input.type ?? eventType(file),
      op,
      tool,
      file_path: file.path,
      section_anchor: anchor ?? null,
      rationale: m.rationale ?? null,
      override_rationale: m.override_rationale ?? null,
      evidence_refs: m.evidence_refs ?? null,
      agent_action_id: m.agent_action_id ?? null,
    },
    m,
    payloadOf(input),
    async (fs, keys) => {
      await stillHere(fs, file.path)
      const before = await readText(fs, file.path)
      const { after, append, material } = compute(before)
      return commitText(ctx, fs, keys, {
        file,
        before,
        after,
        op,
        anchor,
        ...(m.rationale ? { rationale: m.rationale } : {}),
        ...(m.override_rationale ? { override_rationale: m.override_rationale } : {}),
        ...(append ? { append } : {}),
        ...(material === undefined ? {} : { material }),
      })
    },
  )
  return answer(tool, env.paths.display(file.path), out)
}

export function writeTools(ctx: MemoryContext): AnyAgentToolDefinition[] {
  const run = (
    ...args: Parameters<typeof runWrite> extends [MemoryContext, ...infer R] ? R : never
  ) => runWrite(ctx, ...args)

  const patchSectionTool: AgentToolDefinition<
    GardenWrite & {
      path: string
      section_anchor: string
      replace?: string | undefined
      append?: string | undefined
    }
  > = {
    name: 'md_patch_section',
    description:
      "Replaces or appends to one anchored section of a garden Markdown file (anchors from md_list_sections, e.g. 'concerns v1'). Everything outside the section stays byte for byte; the heading and its hidden anchor are kept. Give exactly one of replace or append. Returns before_hash and after_hash.",
    inputSchema: z.object({
      path: z.string().describe('The garden file, e.g. /users/u1/parts/p1/profile.md'),
      section_anchor: z.string().describe("The section's anchor id, e.g. 'concerns v1'"),
      replace: z
        .string()
        .optional()
        .describe("The section's new text (without its heading or anchor)."),
      append: z.string().optional().describe('Lines to add at the end of the section.'),
      ...writeMetaSchema,
    }),
    mutates: true,
    idempotent: false,
    needs: 'fs',
    async handler(input, env) {
      if ((input.replace === undefined) === (input.append === undefined))
        throw new MemoryError('INVALID_ARGUMENT', 'give exactly one of replace or append')
      const op = input.replace === undefined ? 'append_section' : 'replace_section'
      return run(env, 'md_patch_section', input, op, input.section_anchor, (before) => {
        if (before === null)
          throw new MemoryError(
            'NOT_FOUND',
            `${input.path} does not exist; md_patch_section edits an existing file`,
          )
        return {
          after: patchSection(
            before,
            input.section_anchor,
            input.replace === undefined ? { append: input.append! } : { replace: input.replace },
          ),
        }
      })
    },
  }

  const write: AgentToolDefinition<
    GardenWrite & { path: string; content: string; if_match?: string | undefined }
  > = {
    name: 'fs_write',
    description:
      "Writes a whole garden file. With if_match (the hash fs_hash or a previous write returned; 'absent' for a new file), the write is refused if the file changed since. Anchors and identity frontmatter must stay as they are. Returns new_hash.",
    inputSchema: z.object({
      path: z.string(),
      content: z.string(),
      if_match: z.string().optional().describe("The file's hash you last saw, or 'absent'."),
      ...writeMetaSchema,
    }),
    mutates: true,
    idempotent: false,
    needs: 'fs',
    handler: (input, env) =>
      run(env, 'fs_write', input, 'write', undefined, (before) => {
        if (input.if_match !== undefined) {
          const now = before === null ? 'absent' : canonicalHash(before)
          if (now !== input.if_match)
            throw new MemoryError(
              'STALE',
              `${input.path} is ${now}, not ${input.if_match}: it changed since you read it; read it again (fs_read) before writing`,
            )
        }
        return { after: input.content }
      }),
  }

  const append: AgentToolDefinition<GardenWrite & { path: string; text: string }> = {
    name: 'fs_append',
    description:
      'Appends text to the end of a garden file (e.g. a note to notes.md), creating it if needed. Returns new_size in bytes.',
    inputSchema: z.object({ path: z.string(), text: z.string().min(1), ...writeMetaSchema }),
    mutates: true,
    idempotent: false,
    needs: 'fs',
    async handler(input, env) {
      const out = await run(env, 'fs_append', input, 'append', undefined, (before) => ({
        after: (before ?? '') + input.text,
        append: true,
      }))
      return out
    },
  }
  return [patchSectionTool, write, append]
}
