import { openDatabase } from '@agentfs/core'
import { betterSqlite3Driver } from '@agentfs/driver-better-sqlite3'
import { afterEach, describe, expect, test } from 'vitest'
import { createFileSystem, type SqlFileSystem, type WatchEvent } from '../src/index.js'

// What node:fs/promises watch promises, checked one behaviour at a time (the list follows the
// behaviours other fs implementations test their watch against).

const closers: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const close of closers.splice(0)) await close()
})

async function fresh(): Promise<SqlFileSystem> {
  const db = await openDatabase({ driver: betterSqlite3Driver({ path: ':memory:' }) })
  closers.push(() => db.close())
  const fs = createFileSystem(db)
  await fs.mkdir('/dir')
  await fs.writeFile('/dir/test.txt', 'initial')
  return fs
}

/** The first event `watch` yields that `wanted` accepts, within a second; then stops watching. */
async function first(
  fs: SqlFileSystem,
  path: string,
  options: { recursive?: boolean },
  act: () => Promise<unknown>,
  wanted: (e: WatchEvent<string | Buffer>) => boolean = () => true,
): Promise<WatchEvent<string | Buffer>> {
  const controller = new AbortController()
  const timer = setTimeout(() => controller.abort(), 1000)
  const iterator = fs
    .watch(path, { ...options, signal: controller.signal, intervalMs: 5 })
    [Symbol.asyncIterator]()
  // Watching starts with the first next(); what happens after it is seen.
  const next = iterator.next()
  await new Promise((r) => setTimeout(r, 15))
  await act()
  try {
    for (let result = await next; !result.done; result = await iterator.next())
      if (wanted(result.value)) return result.value
    throw new Error('no event')
  } finally {
    clearTimeout(timer)
    controller.abort()
  }
}

describe('fs.watch', () => {
  test('a changed file: change, with its base name', async () => {
    const fs = await fresh()
    expect(
      await first(fs, '/dir/test.txt', {}, () => fs.writeFile('/dir/test.txt', 'updated')),
    ).toEqual({
      eventType: 'change',
      filename: 'test.txt',
    })
  })

  test('a deleted file: rename', async () => {
    const fs = await fresh()
    const event = await first(fs, '/dir/test.txt', {}, () => fs.unlink('/dir/test.txt'))
    expect(event).toEqual({ eventType: 'rename', filename: 'test.txt' })
  })

  test('a directory: a new entry is rename with its name', async () => {
    const fs = await fresh()
    const event = await first(fs, '/dir', {}, () => fs.writeFile('/dir/new.txt', 'x'))
    expect(event).toEqual({ eventType: 'rename', filename: 'new.txt' })
  })

  test('a rename inside a watched directory reports both names', async () => {
    const fs = await fresh()
    await fs.writeFile('/dir/old.txt', 'x')
    const seen: string[] = []
    await first(
      fs,
      '/dir',
      {},
      () => fs.rename('/dir/old.txt', '/dir/new.txt'),
      (e) => {
        seen.push(`${e.eventType} ${e.filename}`)
        return seen.length === 2
      },
    )
    expect(seen).toEqual(['rename old.txt', 'rename new.txt'])
  })

  test('recursive from the root: paths relative to it; events before the first next() are not replayed', async () => {
    const fs = await fresh()
    await fs.mkdir('/dir/sub')
    const event = await first(fs, '/', { recursive: true }, () =>
      fs.writeFile('/dir/sub/t.txt', 'x'),
    )
    expect(event).toEqual({ eventType: 'rename', filename: 'dir/sub/t.txt' })
  })

  test('the root without recursion sees its own entries only', async () => {
    const fs = await fresh()
    const event = await first(fs, '/', {}, async () => {
      await fs.writeFile('/dir/deep.txt', 'not this')
      await fs.writeFile('/top.txt', 'this')
    })
    expect(event).toEqual({ eventType: 'rename', filename: 'top.txt' })
  })

  test('aborting ends the iteration with an AbortError, like Node', async () => {
    const fs = await fresh()
    const controller = new AbortController()
    const iteration = (async () => {
      for await (const _ of fs.watch('/dir', { signal: controller.signal, intervalMs: 5 })) {
      }
    })()
    setTimeout(() => controller.abort(), 20)
    await expect(iteration).rejects.toMatchObject({ name: 'AbortError', code: 'ABORT_ERR' })
  })

  test('encoding buffer gives Buffers; a missing path is ENOENT', async () => {
    const fs = await fresh()
    const controller = new AbortController()
    const iterator = fs
      .watch('/dir', { encoding: 'buffer', signal: controller.signal, intervalMs: 5 })
      [Symbol.asyncIterator]()
    const next = iterator.next()
    await new Promise((r) => setTimeout(r, 15))
    await fs.writeFile('/dir/b', 'x')
    expect((await next).value).toEqual({ eventType: 'rename', filename: Buffer.from('b') })
    controller.abort()
    await iterator.next().catch(() => undefined)
    await expect(fs.watch('/missing')[Symbol.asyncIterator]().next()).rejects.toMatchObject({
      code: 'ENOENT',
    })
  })
})
