import { fixedClock } from '@agentfs/core'
import { AgentFS } from '@agentfs/sdk'
import { mockToolCall as call, mockText, pdf, png } from '@agentfs/test-kit'
import { generateText, stepCountIs } from 'ai'
import { MockLanguageModelV3 } from 'ai/test'
import { expect, test } from 'vitest'
import { aiSdkTools } from '../src/index.js'

test('read_file of an image reaches the model as an image part; a PDF as its text; patches apply', async () => {
  const agent = await AgentFS.open({ path: ':memory:', clock: fixedClock() })
  const image = png(2, 2)
  await agent.fs.writeFile('/shot.png', image)
  await agent.fs.writeFile('/doc.pdf', pdf(['Quarterly numbers']))
  await agent.fs.writeFile('/a.txt', 'one\r\ntwo\r\n')
  const model = new MockLanguageModelV3({
    doGenerate: [
      call('1', 'read_file', { path: '/shot.png' }),
      call('2', 'read_file', { path: '/doc.pdf' }),
      call('3', 'apply_patch', {
        patch: '*** Begin Patch\n*** Update File: /a.txt\n one\n-two\n+2\n*** End Patch',
      }),
      mockText('Seen.'),
    ],
  })
  await generateText({
    model,
    tools: aiSdkTools({ fs: agent.fs, audit: agent.tools }),
    stopWhen: stepCountIs(10),
    prompt: 'Look at the screenshot and the report',
  })
  const imageResult = JSON.stringify(model.doGenerateCalls[1]!.prompt.at(-1))
  expect(imageResult).toContain('"type":"image-data"')
  expect(imageResult).toContain(image.toString('base64'))
  expect(imageResult).toContain('"mediaType":"image/png"')
  const pdfResult = JSON.stringify(model.doGenerateCalls[2]!.prompt.at(-1))
  expect(pdfResult).toContain('is a PDF of 1 page(s)')
  expect(pdfResult).toContain('Quarterly numbers')
  expect(await agent.fs.readFile('/a.txt', 'utf8')).toBe('one\r\n2\r\n')
  await agent.close()
})
