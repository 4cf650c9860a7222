import { createAgentTools } from '@agentfs/agent-tools'
import type { AgentFS } from '@agentfs/sdk'
import { afterEach, describe, expect, test } from 'vitest'
import { memoryPolicy, memoryTools } from '../src/index.js'
import { KEY, PROFILE, PROFILE_PATH, setupToolbelt } from './fixtures.js'

const agents: AgentFS[] = []
afterEach(async () => {
  for (const a of agents.splice(0)) await a.close()
})

/**
 * An agent whose every tool — generic and memory — runs on the garden under the policy (the
 * shell's case is in @agentfs/just-bash's tests, the FUSE mount's in the CLI's).
 */
async function setup() {
  const { agent } = await setupToolbelt(agents, { key: KEY })
  const fs = agent.fs.restrict(memoryPolicy())
  const tools = createAgentTools({
    fs,
    audit: agent.tools,
    tools: memoryTools({ userId: 'u1' }),
  })
  const run = (name: string, input: unknown) => tools.get(name)!.execute(input)
  const text = () => agent.fs.readFile(PROFILE_PATH, 'utf8')
  return { agent, fs, tools, run, text }
}

const NO_ANCHOR = PROFILE.replace('<!-- @anchor: concerns v1 -->\n', '')
const NEW_ID = PROFILE.replace('id: part-42', 'id: part-43')

describe('the memory policy holds every tool to the hard blocks', () => {
  test('generic file tools: anchors, identity, deletes and the allowed roots are refused, nothing written', async () => {
    const { run, text, agent } = await setup()
    const refusals: Array<[string, Record<string, unknown>, RegExp]> = [
      ['write_file', { path: PROFILE_PATH, content: NO_ANCHOR }, /anchor/],
      ['write_file', { path: PROFILE_PATH, content: NEW_ID }, /identity|id/],
      [
        'edit_file',
        { path: PROFILE_PATH, old_string: '<!-- @anchor: evidence v1 -->', new_string: '' },
        /anchor/,
      ],
      [
        'edit_file',
        { path: PROFILE_PATH, old_string: 'user_id: u1', new_string: 'user_id: u2' },
        /user_id|identity/,
      ],
      ['delete', { path: PROFILE_PATH }, /delet/],
      ['write_file', { path: '/users/u1/secrets.md', content: 'x' }, /allowed roots/],
    ]
    for (const [tool, input, reason] of refusals) {
      const out = await run(tool, input)
      expect(out.isError, `${tool} ${JSON.stringify(input).slice(0, 80)}`).toBe(true)
      expect(out.text).toMatch(reason)
    }
    expect(await text()).toBe(PROFILE)
    expect(await agent.fs.exists('/users/u1/secrets.md')).toBe(false)
    // An edit that keeps them is a plain edit.
    const ok = await run('edit_file', {
      path: PROFILE_PATH,
      old_string: 'Worries about deadlines.',
      new_string: 'Worries about friends.',
    })
    expect(ok.isError).toBeFalsy()
    expect(await text()).toBe(PROFILE.replace('deadlines', 'friends'))
  })

  test('the memory tools work under the policy: section edits, history copies, Change Log', async () => {
    const { run, text, agent } = await setup()
    const out = await run('md_patch_section', {
      path: PROFILE_PATH,
      section_anchor: 'concerns v1',
      replace: 'Fears missing out.',
      rationale: 'said so',
    })
    expect(out.isError).toBeFalsy()
    expect(await text()).toContain('Fears missing out.')
    const history = out.data?.history_path as string
    expect(await agent.fs.readFile(history, 'utf8')).toBe(PROFILE)
    // History copies are written once: never edited, never removed.
    expect((await run('write_file', { path: history, content: 'rewritten' })).text).toMatch(
      /history cop/,
    )
    expect((await run('delete', { path: history })).isError).toBe(true)
    expect(await agent.fs.readFile(history, 'utf8')).toBe(PROFILE)
  })
})
