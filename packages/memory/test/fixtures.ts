import { createAgentTools } from '@agentfs/agent-tools'
import { AgentFS } from '@agentfs/sdk'
import { type MemoryToolbeltOptions, memoryTools } from '../src/index.js'

/** A profile as seed 003 lays one out: identity frontmatter, canonical H2 sections with anchors. */
export const PROFILE = `---
id: part-42
user_id: u1
schema: 3
participants: [u1]
title: Inner critic
---
# Inner critic

## Concerns
<!-- @anchor: concerns v1 -->
Worries about deadlines.
Keeps lists.

## Evidence
<!-- @anchor: evidence v1 -->
- "I never finish anything" (ev:2026-01-02)
- "Lists keep me safe" (ev:2026-01-05)

## Change Log
<!-- @anchor: change-log v1 -->
- 2026-01-05: created

\`\`\`
<!-- @anchor: not-an-anchor v1 -->
\`\`\`
`

export const PROFILE_PATH = '/users/u1/parts/p1/profile.md'
export const KEY = { key: Buffer.alloc(32, 3), id: 'salt-1' }

/**
 * An agent with u1's profile at {@link PROFILE_PATH} and the memory tools over it (opened with
 * {@link KEY} unless `key` is null); pushed on `agents` to be closed after the test.
 */
export async function setupToolbelt(
  agents: AgentFS[],
  options: { key?: typeof KEY | null; tools?: Omit<MemoryToolbeltOptions, 'userId'> } = {},
) {
  const agent = await AgentFS.open({
    path: ':memory:',
    ...(options.key === null ? {} : { audit: { key: options.key ?? KEY } }),
  })
  agents.push(agent)
  await agent.fs.mkdir('/users/u1/parts/p1', { recursive: true })
  await agent.fs.writeFile(PROFILE_PATH, PROFILE)
  const tools = createAgentTools({
    fs: agent.fs,
    audit: agent.tools,
    tools: memoryTools({ userId: 'u1', ...options.tools }),
  })
  const run = (name: string, input: unknown) => tools.get(name)!.execute(input)
  return { agent, tools, run }
}
