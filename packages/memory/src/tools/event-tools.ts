import type { AgentToolDefinition, AnyAgentToolDefinition } from '@agentfs/agent-tools'
import { z } from 'zod'
import { canonicalHash } from '../events/event.js'
import type { EventFilters } from '../events/filters.js'
import { databaseFor, gardenFile, type MemoryContext, oneLine, readText } from './context.js'
import { sagaWrite } from './saga.js'

export function eventTools(ctx: MemoryContext): AnyAgentToolDefinition[] {
  const log: AgentToolDefinition<{
    type: string
    op: string
    file_path?: string | undefined
    section_anchor?: string | undefined
    rationale?: string | undefined
    evidence_refs?: string[] | undefined
    agent_action_id?: string | undefined
    idempotency_key?: string | undefined
  }> = {
    name: 'events_log',
    description:
      'Records an event without changing a file (the writes record their own): e.g. an observation that changed nothing yet. Returns event_id.',
    inputSchema: z.object({
      type: z.string().min(1).max(64),
      op: z.string().min(1).max(64),
      file_path: z.string().optional(),
      section_anchor: z.string().max(100).optional(),
      rationale: z.string().optional(),
      evidence_refs: z.array(z.string().max(200)).max(50).optional(),
      agent_action_id: z.string().max(200).optional(),
      idempotency_key: z.string().max(256).optional(),
    }),
    mutates: true,
    idempotent: false,
    needs: 'fs',
    async handler(input, env) {
      const file =
        input.file_path === undefined ? undefined : await gardenFile(ctx, env, input.file_path)
      const rationale = oneLine('rationale', input.rationale)
      const { idempotency_key, agent_action_id, ...payload } = input
      const out = await sagaWrite(
        ctx,
        env,
        {
          type: input.type,
          op: input.op,
          tool: 'events_log',
          file_path: file?.path ?? null,
          section_anchor: input.section_anchor ?? null,
          rationale: rationale ?? null,
          evidence_refs: input.evidence_refs ?? null,
          agent_action_id: agent_action_id ?? null,
        },
        idempotency_key ? { idempotency_key } : {},
        payload,
        async (fs) => {
          const current = file ? await readText(fs, file.path) : null
          const h = current === null ? null : canonicalHash(current)
          return {
            value: {},
            event: { before_hash: h, intended_hash: h },
            after_hash: h,
            line_hash: null,
          }
        },
      )
      return {
        text: `${out.replayed ? 'Already logged: ' : ''}event ${out.event_id}`,
        data: { event_id: out.event_id },
        ...(out.replayed ? { replayed: true } : {}),
      }
    },
  }

  const query: AgentToolDefinition<{
    type?: string | undefined
    op?: string | undefined
    status?: 'pending' | 'committed' | 'failed' | undefined
    file_path?: string | undefined
    section_anchor?: string | undefined
    limit?: number | undefined
  }> = {
    name: 'events_query',
    description:
      "Lists this user's memory events, newest first, filtered by type, op, status, file or section.",
    inputSchema: z.object({
      type: z.string().optional(),
      op: z.string().optional(),
      status: z.enum(['pending', 'committed', 'failed']).optional(),
      file_path: z.string().optional(),
      section_anchor: z.string().optional(),
      limit: z.number().int().min(1).max(200).optional(),
    }),
    mutates: false,
    needs: 'fs',
    async handler(input, env) {
      const db = databaseFor(env.fs)
      const file =
        input.file_path === undefined ? undefined : await env.paths.resolve(input.file_path, env.fs)
      const filters: Record<string, unknown> = {
        user_id: ctx.garden.userId,
        limit: input.limit ?? 50,
      }
      for (const k of ['type', 'op', 'status', 'section_anchor'] as const)
        if (input[k] !== undefined) filters[k] = input[k]
      if (file !== undefined) filters.file_path = file
      const rows = await ctx.query(db, filters as EventFilters)
      return {
        text:
          rows.length === 0
            ? 'No events.'
            : rows
                .map(
                  (e) =>
                    `${e.id} ${e.status} ${e.type}/${e.op} ${e.file_path ?? ''}${e.section_anchor ? `#${e.section_anchor}` : ''} ${e.after_hash ?? ''}${e.error ? ` error: ${e.error}` : ''}`,
                )
                .join('\n'),
        data: { rows },
      }
    },
  }
  return [log, query]
}
