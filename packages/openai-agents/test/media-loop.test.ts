import { fixedClock } from '@agentfs/core'
import { AgentFS } from '@agentfs/sdk'
import { pdf, png } from '@agentfs/test-kit'
import { callTool, ScriptedModel, say } from '@agentfs/test-kit/openai-model'
import { Agent, run, setTracingDisabled } from '@openai/agents'
import { expect, test } from 'vitest'
import { openAiAgentsTools } from '../src/index.js'

setTracingDisabled(true)

test('read_file of an image reaches the model as an input image; a PDF as its text', async () => {
  const agentfs = await AgentFS.open({ path: ':memory:', clock: fixedClock() })
  const image = png(3, 1)
  await agentfs.fs.writeFile('/shot.png', image)
  await agentfs.fs.writeFile('/doc.pdf', pdf(['Signed contract']))
  const model = new ScriptedModel([
    callTool('c1', 'read_file', { path: '/shot.png' }),
    callTool('c2', 'read_file', { path: '/doc.pdf' }),
    say('Seen.'),
  ])
  const agent = new Agent({
    name: 'viewer',
    instructions: 'Look at files.',
    model,
    tools: openAiAgentsTools({ fs: agentfs.fs, audit: agentfs.tools }),
  })
  await run(agent, 'Look at the screenshot', { maxTurns: 10 })
  const afterImage = JSON.stringify(model.requests[1]!.input)
  expect(afterImage).toContain(`data:image/png;base64,${image.toString('base64')}`)
  expect(afterImage).toContain('is an image (image/png')
  expect(JSON.stringify(model.requests[2]!.input)).toContain('Signed contract')
  await agentfs.close()
})
