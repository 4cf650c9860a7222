import { aiSdkTools } from '@agentfs/ai-sdk'
import { memoryPolicy, memoryTools, openMemory } from '@agentfs/memory'
import type { AgentFS } from '@agentfs/sdk'
import { generateText, stepCountIs } from 'ai'
import { MockLanguageModelV3 } from 'ai/test'

/**
 * The memory demo (seed 003): a scripted model tends a user's garden through the memory
 * toolbelt and the generic tools, all under the memory policy — the seed's three flows (a
 * profile section update; an evidence item; grep and note capture), one hard-blocked edit and
 * one retried call.
 */

export const MEMORY_SESSION = 'memory-demo'
export const PROFILE_PATH = '/users/u1/parts/p1/profile.md'
export const NOTES_PATH = '/users/u1/notes.md'

const PROFILE = `---
id: p1
user_id: u1
participants: [u1]
schema: 1
---
# Inner critic

## Concerns
<!-- @anchor: concerns v1 -->
Worries about deadlines.

## Evidence
<!-- @anchor: evidence v1 -->
- "I never finish anything" (ev:2026-01-02)
- "Lists keep me safe" (ev:2026-01-05)

## Change Log
<!-- @anchor: change-log v1 -->
- 2026-01-05: created
`

const NOTES = `# Notes

- 2026-11-20: talked about a missed deadline at work
- 2026-11-24: a friend's party; felt left out
`

/** A small garden: u1's profile of one part, and their notes. */
export async function plantGarden(agent: AgentFS): Promise<void> {
  await agent.transaction(async (tx) => {
    await tx.fs.mkdir('/users/u1/parts/p1', { recursive: true })
    await tx.fs.writeFile(PROFILE_PATH, PROFILE)
    await tx.fs.writeFile(NOTES_PATH, NOTES)
  })
}

const usage = {
  inputTokens: { total: 200, noCache: 200, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 40, text: 40, reasoning: undefined },
}
const step = (id: number, toolName: string, input: unknown) => ({
  content: [
    { type: 'tool-call' as const, toolCallId: `m-${id}`, toolName, input: JSON.stringify(input) },
  ],
  finishReason: { unified: 'tool-calls' as const, raw: 'tool_calls' },
  usage,
  warnings: [],
})

const CAPTURE = {
  path: NOTES_PATH,
  text: '- 2026-11-27: theme across notes: fear of missing out (deadlines, friends)\n',
  rationale: 'captured theme in notes',
  idempotency_key: 'capture-2026-11-27',
}

/** The scripted model: the seed's three flows, a blocked edit, and a retried call. */
export function memoryModel(): MockLanguageModelV3 {
  let n = 0
  const s = (tool: string, input: unknown) => step(++n, tool, input)
  return new MockLanguageModelV3({
    doGenerate: [
      // 1. Profile section update.
      s('fs_read', { path: PROFILE_PATH }),
      s('md_list_sections', { path: PROFILE_PATH }),
      s('md_patch_section', {
        path: PROFILE_PATH,
        section_anchor: 'concerns v1',
        replace: 'Fears missing out: on friends as much as on deadlines.',
        rationale: 'the user named it today',
        evidence_refs: ['ev:2026-11-27'],
      }),
      // 2. Add an evidence item.
      s('md_curate_list', {
        path: PROFILE_PATH,
        section_anchor: 'evidence v1',
        ops: [{ op: 'append', item: '"Everyone was there but me" (ev:2026-11-27)' }],
        reason: 'new evidence from today',
      }),
      s('md_lint', { path: PROFILE_PATH }),
      // 3. Grep and note capture.
      s('fs_search', { root: '/users/u1', pattern: 'deadline|friend' }),
      s('fs_append', CAPTURE),
      // A hard-blocked edit: a generic overwrite that drops the anchors and the identity.
      s('write_file', { path: PROFILE_PATH, content: '# Inner critic\n\nAll better now.\n' }),
      // A retried call: the answer was lost on the way; the same key applies it once.
      s('fs_append', CAPTURE),
      {
        content: [
          {
            type: 'text' as const,
            text: 'Updated the concerns, added the evidence, noted the theme.',
          },
        ],
        finishReason: { unified: 'stop' as const, raw: 'stop' },
        usage,
        warnings: [],
      },
    ],
  })
}

/** Runs the session: every tool under the memory policy, events in the database. */
export async function runMemorySession(agent: AgentFS, model = memoryModel()) {
  const memory = await openMemory({ userId: 'u1', fs: agent.fs })
  const result = await generateText({
    model,
    tools: aiSdkTools({
      fs: agent.fs.restrict(memoryPolicy()),
      audit: agent.tools,
      sessionId: MEMORY_SESSION,
      tools: memoryTools({ userId: 'u1' }),
      include: [
        'fs_read',
        'fs_search',
        'fs_append',
        'md_list_sections',
        'md_patch_section',
        'md_curate_list',
        'md_lint',
        'events_query',
        'write_file',
        'read_file',
      ],
    }),
    stopWhen: stepCountIs(20),
    prompt: "The user says they fear missing out on friends. Tend u1's garden.",
  })
  return { result, memory, model }
}
