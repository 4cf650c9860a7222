import { SLOT_SPAN } from '@agentfs/core'
import { expect, test } from 'vitest'
import { converge, files, world } from './helpers.js'

test('a second client bootstraps from the first one and both converge', async () => {
  const { client } = await world()
  const a = await client('a')
  await a.fs.mkdir('/docs')
  await a.fs.writeFile('/docs/readme.md', 'hello')
  await a.kv.set('k', { v: 1 })
  await a.tools.record({
    name: 'read',
    parameters: { p: 1 },
    result: 'ok',
    startedAt: 1,
    completedAt: 2,
  })
  await a.sync.push()
  const b = await client('b')
  expect(await b.fs.readFile('/docs/readme.md', 'utf8')).toBe('hello')
  await b.fs.writeFile('/docs/b.txt', 'from b')
  await converge(a, b)
  expect(await files(a)).toEqual({ '/docs/readme.md': 'hello', '/docs/b.txt': 'from b' })
  const slotA = (await a.sync.status()).slot
  const slotB = (await b.sync.status()).slot
  expect(slotA).not.toBe(slotB)
  expect(Math.floor((await a.fs.stat('/docs/b.txt')).ino / SLOT_SPAN)).toBe(slotB)
})

test('each client records its changes in the feed with its own ids; snapshots are refused clearly', async () => {
  const { client } = await world()
  const a = await client('a')
  await a.fs.writeFile('/one.txt', '1')
  await a.kv.set('k', 1)
  const { changes } = await a.changes.since(0)
  expect(changes.map((c) => c.op)).toEqual(['create', 'kv-set'])
  const slot = (await a.sync.status()).slot
  expect(changes.every((c) => Math.floor(c.seq / SLOT_SPAN) === slot)).toBe(true)
  await expect(a.snapshot('s')).rejects.toThrow(/not supported on a synced database/)
})
