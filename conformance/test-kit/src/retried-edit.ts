import { expect } from 'vitest'

/**
 * The retry scenario every adapter's agent loop runs: a model sends one edit twice (the first
 * answer was lost on the way), with the same `idempotency_key`; the edit must apply once.
 */
export const RETRIED_EDIT = {
  path: '/notes.md',
  old_string: 'TODO: ship',
  new_string: 'DONE: ship',
  idempotency_key: 'edit-1',
}

/** The file the edit starts from. */
export const RETRIED_EDIT_BEFORE = '# Notes\n- TODO: ship\n'

/** What `expectEditedOnce` reads: an AgentFS (its fs and audit log). */
interface Audited {
  readonly fs: { readFile(path: string, encoding: 'utf8'): Promise<string> }
  readonly tools: {
    bySession(
      sessionId: string,
    ): Promise<ReadonlyArray<{ id: number; name: string; status: string; metadata: unknown }>>
  }
}

/**
 * The edit applied once; both calls are audited as successes, the second as a replay of the
 * first; the model's second answer was not an error.
 */
export async function expectEditedOnce(
  agent: Audited,
  sessionId: string,
  secondAnswer: unknown,
): Promise<void> {
  expect(await agent.fs.readFile('/notes.md', 'utf8')).toBe('# Notes\n- DONE: ship\n')
  const calls = await agent.tools.bySession(sessionId)
  expect(calls.map((c) => [c.name, c.status])).toEqual([
    ['edit_file', 'success'],
    ['edit_file', 'success'],
  ])
  expect(calls[1]!.metadata).toMatchObject({ replayOf: calls[0]!.id })
  expect(JSON.stringify(secondAnswer)).not.toMatch(/not found|Error/)
}
