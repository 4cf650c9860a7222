import { createHash } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type AgentDatabase, type Change, openDatabase, readChanges } from '@agentfs/core'
import { betterSqlite3Driver } from '@agentfs/driver-better-sqlite3'
import { afterEach, describe, expect, test } from 'vitest'
import { createFileSystem, REHASH_MAX, type SqlFileSystem } from '../src/index.js'
import { DRIVERS, freshFs } from './helpers.js'

const sha = (bytes: Uint8Array | string) =>
  `sha256:${createHash('sha256').update(bytes).digest('hex')}`

/** The newest change of the feed. */
async function last(db: AgentDatabase): Promise<Change> {
  const page = await readChanges(db, 0, { reverse: true, limit: 1 })
  return page.changes[0]!
}

/** A tiny deterministic generator (tests replay with the seed they print). */
function rng(seed: number): (n: number) => number {
  let x = seed >>> 0 || 1
  return (n) => {
    x ^= x << 13
    x ^= x >>> 17
    x ^= x << 5
    return (x >>> 0) % n
  }
}

describe.each(Object.keys(DRIVERS))('content hashes in the feed (%s)', (driver) => {
  test('every content change records the hash after it, and before it for an existing file', async () => {
    const { fs, db } = await freshFs(driver, { chunkSize: 64 })
    await fs.writeFile('/a.txt', 'first version\n')
    expect(await last(db)).toMatchObject({
      op: 'create',
      hash: sha('first version\n'),
      prevHash: null,
    })
    await fs.writeFile('/a.txt', 'second\n')
    expect(await last(db)).toMatchObject({
      op: 'write',
      hash: sha('second\n'),
      prevHash: sha('first version\n'),
    })
    await fs.appendFile('/a.txt', 'more\n')
    expect(await last(db)).toMatchObject({
      hash: sha('second\nmore\n'),
      prevHash: sha('second\n'),
    })
    await fs.truncate('/a.txt', 3)
    expect(await last(db)).toMatchObject({
      op: 'truncate',
      hash: sha('sec'),
      prevHash: sha('second\nmore\n'),
    })
    await fs.copyFile('/a.txt', '/b.txt')
    expect(await last(db)).toMatchObject({ op: 'create', path: '/b.txt', hash: sha('sec') })
    // Opening with O_TRUNC empties the file: its row says so.
    const handle = await fs.open('/a.txt', 'w')
    expect(await last(db)).toMatchObject({ op: 'truncate', hash: sha(''), prevHash: sha('sec') })
    await handle.write('abc')
    await handle.write('def')
    expect(await last(db)).toMatchObject({ hash: sha('abcdef'), prevHash: sha('abc') })
    await handle.write('X', 1)
    expect(await last(db)).toMatchObject({ hash: sha('aXcdef'), prevHash: sha('abcdef') })
    await handle.close()
    // Changes that are not of content carry no hash.
    await fs.chmod('/a.txt', 0o600)
    await fs.rename('/a.txt', '/c.txt')
    for (const change of (await readChanges(db, 0, { reverse: true, limit: 2 })).changes)
      expect(change).toMatchObject({ hash: null, prevHash: null })
  })

  test('a random mix of writes: each row holds the hash of the content it left', async () => {
    const seed = Date.now() % 100_000
    const next = rng(seed)
    const { fs, db } = await freshFs(driver, { chunkSize: 64 })
    const model = new Map<string, Buffer>()
    const paths = ['/x', '/y', '/z']
    for (let step = 0; step < 120; step++) {
      const path = paths[next(paths.length)]!
      const old = model.get(path)
      const bytes = Buffer.from(Array.from({ length: next(160) }, () => 97 + next(26)))
      const kind = next(old ? 6 : 1)
      let now: Buffer
      if (kind === 0) {
        await fs.writeFile(path, bytes)
        now = bytes
      } else if (kind === 1) {
        await fs.appendFile(path, bytes)
        now = Buffer.concat([old!, bytes])
      } else if (kind === 2) {
        const length = next(old!.length + 80)
        await fs.truncate(path, length)
        now = Buffer.alloc(length)
        old!.copy(now, 0, 0, Math.min(length, old!.length))
      } else if (kind === 3) {
        const at = next(old!.length + 70)
        const handle = await fs.open(path, 'r+')
        await handle.write(bytes, 0, bytes.length, at)
        await handle.close()
        now = Buffer.alloc(Math.max(old!.length, at + bytes.length))
        old!.copy(now)
        bytes.copy(now, at)
      } else if (kind === 4) {
        const from = paths.find((p) => p !== path && model.has(p))
        if (!from) continue
        await fs.copyFile(from, path)
        now = Buffer.from(model.get(from)!)
      } else {
        const handle = await fs.open(path, 'a')
        await handle.write(bytes)
        await handle.write(bytes)
        await handle.close()
        now = Buffer.concat([old!, bytes, bytes])
      }
      const change = await last(db)
      const where = `seed ${seed}, step ${step}, ${change.op} ${path}`
      expect(change.hash, where).toBe(sha(now))
      if (kind !== 0 || old) expect(change.prevHash, where).not.toBeNull()
      model.set(path, now)
    }
    // Every row of the feed agrees with the file as the version it names.
    for (const [path, bytes] of model) expect(sha(await fs.readFile(path)), path).toBe(sha(bytes))
  })
})

describe('content hashes of large files, from another connection', () => {
  let dir: string | undefined
  const dbs: AgentDatabase[] = []
  afterEach(async () => {
    for (const db of dbs.splice(0)) await db.close()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })
  async function connection(): Promise<{ fs: SqlFileSystem; db: AgentDatabase }> {
    dir ??= mkdtempSync(join(tmpdir(), 'agentfs-feed-hash-'))
    const db = await openDatabase({ driver: betterSqlite3Driver({ path: join(dir, 'a.db') }) })
    dbs.push(db)
    return { fs: createFileSystem(db), db }
  }

  test('a stream is hashed as it goes; a write into the middle of an unknown large file records no hash', async () => {
    const a = await connection()
    const piece = Buffer.alloc(256 * 1024, 7)
    const handle = await a.fs.open('/big.bin', 'w')
    const whole: Buffer[] = []
    for (let i = 0; i < 8; i++) {
      piece[0] = i
      await handle.write(piece)
      whole.push(Buffer.from(piece))
    }
    await handle.close()
    expect(Buffer.concat(whole).length).toBeGreaterThan(REHASH_MAX)
    expect((await last(a.db)).hash).toBe(sha(Buffer.concat(whole)))

    // Another connection does not know this content: over REHASH_MAX it is not read again.
    const b = await connection()
    const other = await b.fs.open('/big.bin', 'r+')
    await other.write(Buffer.from('middle'), 0, 6, 1000)
    await other.close()
    expect(await last(b.db)).toMatchObject({ op: 'write', hash: null, prevHash: null })
    // A whole rewrite is hashed from its bytes, whatever was known; so is a later append.
    const bytes = Buffer.alloc(REHASH_MAX * 2, 3)
    await b.fs.writeFile('/big.bin', bytes)
    expect((await last(b.db)).hash).toBe(sha(bytes))
    await a.fs.appendFile('/big.bin', 'tail')
    // `a` did not see that rewrite: it reads nothing that large, so it records no hash...
    expect(await last(a.db)).toMatchObject({ hash: null, prevHash: null })
    // ...while `b`, whose content it was, extends small files and knows small ones again.
    await b.fs.writeFile('/small.txt', 'x')
    await a.fs.appendFile('/small.txt', 'y')
    expect(await last(a.db)).toMatchObject({ hash: sha('xy'), prevHash: sha('x') })
    // What `a` remembers of a file is of one version: after `b` rewrote it (same size), it is
    // not used.
    await a.fs.writeFile('/same.txt', 'aaaa')
    await b.fs.writeFile('/same.txt', 'bbbb')
    await a.fs.appendFile('/same.txt', 'c')
    expect(await last(a.db)).toMatchObject({ hash: sha('bbbbc'), prevHash: sha('bbbb') })
    const h = await a.fs.open('/same.txt', 'a')
    await b.fs.writeFile('/same.txt', 'ddddd')
    await h.write('e')
    await h.close()
    expect(await last(a.db)).toMatchObject({ hash: sha('ddddde'), prevHash: sha('ddddd') })
  })
})
