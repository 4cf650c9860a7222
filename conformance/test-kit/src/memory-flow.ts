import { expect } from 'vitest'

/**
 * Seed 003's profile-update flow, as every adapter's agent loop runs it with the memory
 * toolbelt (`@agentfs/memory`) on a mock model: read the profile, list its sections, replace
 * one section with a rationale and evidence, lint, then try a generic overwrite that drops the
 * anchors — which the memory policy refuses, and the model hears why.
 */

export const MEMORY_PROFILE_PATH = '/users/u1/parts/p1/profile.md'

export const MEMORY_PROFILE = `---
id: p1
user_id: u1
schema: 1
---
# Inner critic

## Concerns
<!-- @anchor: concerns v1 -->
Worries about deadlines.

## Evidence
<!-- @anchor: evidence v1 -->
- "Lists keep me safe" (ev:2026-01-05)

## Change Log
<!-- @anchor: change-log v1 -->
`

/** The audit key the flow's database is opened with (events are sealed with it). */
export const MEMORY_KEY = { key: new Uint8Array(32).fill(7), id: 'flow-key' }

/** The calls the mock model makes, in order: [tool, input]. */
export const MEMORY_FLOW: ReadonlyArray<readonly [string, Record<string, unknown>]> = [
  ['fs_read', { path: MEMORY_PROFILE_PATH }],
  ['md_list_sections', { path: MEMORY_PROFILE_PATH }],
  [
    'md_patch_section',
    {
      path: MEMORY_PROFILE_PATH,
      section_anchor: 'concerns v1',
      replace: 'Fears missing out on friends.',
      rationale: 'the user said so today',
      evidence_refs: ['ev:2026-11-27'],
    },
  ],
  ['md_lint', { path: MEMORY_PROFILE_PATH }],
  ['write_file', { path: MEMORY_PROFILE_PATH, content: 'Fears missing out on friends.\n' }],
]

/** What the checks read: an AgentFS with its database, files and audit log. */
interface MemoryAgent {
  readonly fs: {
    readFile(path: string, encoding: 'utf8'): Promise<string>
    mkdir(path: string, options: { recursive: true }): Promise<unknown>
    writeFile(path: string, data: string): Promise<void>
  }
  readonly db: {
    execute<T>(statement: { sql: string }): Promise<{ rows: T[] }>
  }
  readonly tools: {
    bySession(sessionId: string): Promise<ReadonlyArray<{ name: string; status: string }>>
  }
}

/** Lays out u1's profile. */
export async function plantMemoryGarden(agent: MemoryAgent): Promise<void> {
  await agent.fs.mkdir('/users/u1/parts/p1', { recursive: true })
  await agent.fs.writeFile(MEMORY_PROFILE_PATH, MEMORY_PROFILE)
}

/**
 * The flow's outcome: the section replaced and everything else kept, a history copy and a
 * Change Log line, one committed event (and none for the refused overwrite, which the memory
 * tools never saw), the refusal in the model's next prompt, every call audited.
 */
export async function expectMemoryFlow(
  agent: MemoryAgent,
  sessionId: string,
  promptAfterRefusal: unknown,
): Promise<void> {
  const text = await agent.fs.readFile(MEMORY_PROFILE_PATH, 'utf8')
  // Bytes outside the section as they were.
  const head = MEMORY_PROFILE.slice(0, MEMORY_PROFILE.indexOf('Worries'))
  expect(text.startsWith(`${head}Fears missing out on friends.\n\n## Evidence\n`)).toBe(true)
  expect(text).toContain(MEMORY_PROFILE.slice(MEMORY_PROFILE.indexOf('## Evidence')))
  expect(text).toMatch(/- \d{4}-\d\d-\d\d: replace_section 'concerns v1' — the user said so today/)
  const { rows } = await agent.db.execute<{ status: string; op: string; evidence_refs: string }>({
    sql: 'SELECT status, op, evidence_refs FROM agentfs_memory_event',
  })
  expect(rows).toEqual([
    { status: 'committed', op: 'replace_section', evidence_refs: '["ev:2026-11-27"]' },
  ])
  const history = await agent.db.execute<{ n: number }>({
    sql: "SELECT count(*) AS n FROM fs_dentry WHERE name LIKE '%.md' AND parent_ino IN (SELECT ino FROM fs_dentry WHERE name = 'profile')",
  })
  expect(Number(history.rows[0]!.n)).toBe(1)
  expect(JSON.stringify(promptAfterRefusal)).toMatch(/anchor/)
  expect((await agent.tools.bySession(sessionId)).map((c) => [c.name, c.status])).toEqual([
    ['fs_read', 'success'],
    ['md_list_sections', 'success'],
    ['md_patch_section', 'success'],
    ['md_lint', 'success'],
    ['write_file', 'error'],
  ])
}
