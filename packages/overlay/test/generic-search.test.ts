import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, expect, test, vi } from 'vitest'
import { HostFileSystem } from '../src/index.js'

// grep on a filesystem without SQL of its own (a host directory, the overlay) reads files piece
// by piece under its byte budget: a huge file stops the search at the budget, never read whole.

let root: string
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'agentfs-grep-'))
  await writeFile(join(root, 'big.log'), Buffer.alloc(8 * 1024 * 1024, 'x'))
  await writeFile(join(root, 'small.txt'), 'one\nneedle two\nthree\nneedle')
  await writeFile(join(root, 'bin.dat'), Buffer.from([110, 101, 0, 100, 108, 101]))
})
afterAll(() => rm(root, { recursive: true, force: true }))

test('a file over the byte budget fails with EFBIG after reading no more than the budget', async () => {
  const fs = new HostFileSystem({ root })
  const readFile = vi.spyOn(fs, 'readFile')
  const error = await fs.grep('needle', { maxBytes: 256 * 1024 }).catch((e: unknown) => e)
  expect((error as { code?: string }).code).toBe('EFBIG')
  expect(readFile).not.toHaveBeenCalled()
})

test('lines are numbered across pieces, the last line without a newline counts, binary files are skipped', async () => {
  const fs = new HostFileSystem({ root })
  const matches = await fs.grep('needle', { path: '/', glob: '*.{txt,dat}' })
  expect(matches.map((m) => `${m.path}:${m.line}:${m.text}`)).toEqual([
    '/small.txt:2:needle two',
    '/small.txt:4:needle',
  ])
})
