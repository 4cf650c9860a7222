import { expect, test } from 'vitest'
import { openTools } from './open-tools.js'

const setup = () => openTools()

test('replace_all of an exact text replaces every occurrence, past any match cap', async () => {
  const { agent, run } = await setup()
  await agent.fs.writeFile('/many.txt', 'a\n'.repeat(20_000))
  const out = await run('edit_file', {
    path: '/many.txt',
    old_string: 'a',
    new_string: 'b',
    replace_all: true,
  })
  expect(out.isError, out.text).toBeFalsy()
  expect(await agent.fs.readFile('/many.txt', 'utf8')).toBe('b\n'.repeat(20_000))
})

test('a tolerant match of more than 10,000 places is refused, nothing changed', async () => {
  const { agent, run } = await setup()
  const before = 'a \n'.repeat(10_001)
  await agent.fs.writeFile('/t.txt', before)
  const out = await run('edit_file', {
    path: '/t.txt',
    old_string: 'a\n',
    new_string: 'b\n',
    replace_all: true,
  })
  expect(out).toMatchObject({ isError: true, code: 'AMBIGUOUS' })
  expect(out.text).toContain('more than 10000 places')
  expect(await agent.fs.readFile('/t.txt', 'utf8')).toBe(before)
})

test('a patch of many hunks placed exactly on a large file is linear; one placed only tolerantly everywhere is cut off', async () => {
  const { agent, run } = await setup()
  const lines = Array.from({ length: 50_000 }, (_, i) => `line ${i}`)
  await agent.fs.writeFile('/big.txt', `${lines.join('\n')}\n`)
  const hunks = (n: number, text: (i: number) => string) =>
    Array.from({ length: n }, (_, i) => `@@\n-${text(i)}\n+LINE ${i}`).join('\n')
  const exact = await run('apply_patch', {
    patch: `*** Begin Patch\n*** Update File: /big.txt\n${hunks(2_000, (i) => `line ${i}`)}\n*** End Patch`,
  })
  expect(exact.isError, exact.text.slice(0, 300)).toBeFalsy()
  expect((await agent.fs.readFile('/big.txt', 'utf8')).split('\n')[1_999]).toBe('LINE 1999')
  // Every line ends in spaces: each hunk is found only tolerantly, which needs the whole file.
  await agent.fs.writeFile('/big.txt', `${lines.join('  \n')}  \n`)
  const tolerant = await run('apply_patch', {
    patch: `*** Begin Patch\n*** Update File: /big.txt\n${hunks(2_000, (i) => `line ${i}`)}\n*** End Patch`,
  })
  expect(tolerant).toMatchObject({ isError: true, code: 'PATCH_FAILED' })
  expect(tolerant.text).toContain('line comparisons')
  expect((await agent.fs.readFile('/big.txt', 'utf8')).startsWith('line 0  \n')).toBe(true)
}, 60_000)
