import { fixedClock } from '@agentfs/core'
import { AgentFS } from '@agentfs/sdk'
import { afterEach } from 'vitest'
import { type AgentToolsOptions, createAgentTools } from '../src/index.js'

const agents: AgentFS[] = []
afterEach(async () => {
  for (const a of agents.splice(0)) await a.close()
})

/**
 * An in-memory AgentFS (closed after the test) and its tools, audited: `run(name, input)` runs
 * one, `read(path)` reads a file as text.
 */
export async function openTools(options: Partial<AgentToolsOptions> = {}) {
  const agent = await AgentFS.open({ path: ':memory:', clock: fixedClock() })
  agents.push(agent)
  const tools = createAgentTools({ fs: agent.fs, audit: agent.tools, ...options })
  const run = (name: string, input: unknown) => tools.get(name)!.execute(input)
  const read = async (path: string) => (await agent.fs.readFile(path)).toString('utf8')
  return { agent, tools, run, read }
}
