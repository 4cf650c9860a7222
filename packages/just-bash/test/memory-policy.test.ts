import { createAgentTools } from '@agentfs/agent-tools'
import { memoryPolicy } from '@agentfs/memory'
import { AgentFS } from '@agentfs/sdk'
import {
  MEMORY_KEY,
  MEMORY_PROFILE,
  MEMORY_PROFILE_PATH,
  plantMemoryGarden,
} from '@agentfs/test-kit'
import { expect, test } from 'vitest'
import { bashTool } from '../src/index.js'

test("a shell under @agentfs/memory's policy: redirects, sed -i, rm and mv on a garden file fail with the reason and change nothing", async () => {
  const agent = await AgentFS.open({ path: ':memory:', audit: { key: MEMORY_KEY } })
  await plantMemoryGarden(agent)
  const tools = createAgentTools({
    fs: agent.fs.restrict(memoryPolicy()),
    audit: agent.tools,
    tools: [bashTool()],
  })
  const bash = (command: string) => tools.get('bash')!.execute({ command })
  const text = () => agent.fs.readFile(MEMORY_PROFILE_PATH, 'utf8')
  const p = MEMORY_PROFILE_PATH
  for (const [script, reason] of [
    [`echo gone > ${p}`, /anchor/],
    [`sed -i 's/<!-- @anchor: concerns v1 -->//' ${p}`, undefined],
    [`sed -i 's/user_id: u1/user_id: u9/' ${p}`, undefined],
    [`rm ${p}`, /deleting or moving/],
    [`mv ${p} /elsewhere.md`, /deleting or moving/],
    ['echo x > /users/u1/secrets.md', /allowed roots/],
  ] as const) {
    const out = await bash(script)
    expect(out.code, `${script}: ${out.text}`).toBe('EXIT')
    if (reason) expect(out.text, script).toMatch(reason)
    expect(await text(), script).toBe(MEMORY_PROFILE)
  }
  const ok = await bash("echo '- more' >> /users/u1/notes.md && cat /users/u1/notes.md")
  expect(ok.text).toContain('- more')
  await agent.close()
})
