import { mkdir, mkdtemp, readdir, readFile, rename, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { afterEach, describe, expect, test } from 'vitest'
import { HostFileSystem } from '../src/index.js'

// HostFileSystem({ writable: true }) confined to its root: every write through a link that
// leads out used to land outside (7 of 7 operations).

const dirs: string[] = []
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true })
})

async function setup() {
  const top = await mkdtemp(join(tmpdir(), 'agentfs-host-'))
  dirs.push(top)
  const root = join(top, 'root')
  const outside = join(top, 'outside')
  await mkdir(join(root, 'dir'), { recursive: true })
  await mkdir(outside)
  await writeFile(join(outside, 'victim.txt'), 'precious')
  await symlink(outside, join(root, 'out'))
  await symlink(join(outside, 'victim.txt'), join(root, 'victim-link'))
  await symlink(join(outside, 'new.txt'), join(root, 'dangling'))
  await symlink('../outside', join(root, 'dir', 'up'))
  return { root, outside, fs: new HostFileSystem({ root, writable: true }) }
}

async function code(p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p
    return undefined
  } catch (error) {
    return (error as { code?: string }).code
  }
}

describe('HostFileSystem never writes or reads outside its root', () => {
  test('every operation through a link that leads out is refused before any effect', async () => {
    const { outside, fs } = await setup()
    const attempts: Array<[string, () => Promise<unknown>]> = [
      ['writeFile', () => fs.writeFile('/out/planted.txt', 'x')],
      ['writeFile via file link', () => fs.writeFile('/victim-link', 'x')],
      ['writeFile via dangling link', () => fs.writeFile('/dangling', 'x')],
      ['appendFile', () => fs.appendFile('/victim-link', 'x')],
      ['truncate', () => fs.truncate('/victim-link', 0)],
      ['mkdir', () => fs.mkdir('/out/made')],
      ['mkdir -p', () => fs.mkdir('/out/a/b', { recursive: true })],
      ['symlink', () => fs.symlink('/etc', '/out/l')],
      ['rm -r', () => fs.rm('/out/victim.txt')],
      ['rm -r relative', () => fs.rm('/dir/up/victim.txt')],
      ['chmod', () => fs.chmod('/victim-link', 0o777)],
      ['utimes', () => fs.utimes('/victim-link', 0, 0)],
      ['copyFile', () => fs.copyFile('/dir', '/out/copy')],
      ['readFile', () => fs.readFile('/victim-link')],
      ['readdir', () => fs.readdir('/out')],
      ['open', () => fs.open('/dangling', 'w')],
      [
        'createWriteStream',
        () => pipeline(Readable.from([Buffer.from('x')]), fs.createWriteStream('/out/s.txt')),
      ],
    ]
    for (const [name, attempt] of attempts) {
      const result = await code(attempt())
      expect(['EACCES', 'ELOOP', 'EISDIR', 'ENOENT'], name).toContain(result)
    }
    expect((await readdir(outside)).sort()).toEqual(['victim.txt'])
    expect(await readFile(join(outside, 'victim.txt'), 'utf8')).toBe('precious')
  })

  test('rm -r of a directory holding links removes the links, never what they point to', async () => {
    const { root, outside, fs } = await setup()
    await fs.rm('/dir', { recursive: true })
    await fs.unlink('/out')
    expect(await readdir(root)).toEqual(['dangling', 'victim-link'])
    expect(await readFile(join(outside, 'victim.txt'), 'utf8')).toBe('precious')
  })

  test('a directory swapped for a link while writes run never sends a write outside', async () => {
    const { root, outside, fs } = await setup()
    for (let round = 0; round < 50; round++) {
      await mkdir(join(root, 'work'), { recursive: true })
      const writes = Array.from({ length: 6 }, (_, i) =>
        fs.writeFile(`/work/f${round}-${i}`, 'x').catch(() => undefined),
      )
      // rename, not rm -r: the writes still running would refill a directory being emptied
      // (ENOTEMPTY); a rename swaps it in one step, as an attacker's script would
      const swap = (async () => {
        await rename(join(root, 'work'), join(root, `gone-${round}`))
        await symlink(outside, join(root, 'work'))
      })()
      await Promise.all([swap, ...writes])
      await rm(join(root, 'work'), { force: true, recursive: true })
    }
    expect((await readdir(outside)).sort()).toEqual(['victim.txt'])
  })

  test('links inside the root still work; noFollow refuses them all', async () => {
    const { root, fs } = await setup()
    await writeFile(join(root, 'dir', 'real.txt'), 'inside')
    await symlink('dir', join(root, 'alias'))
    expect(await fs.readFile('/alias/real.txt', 'utf8')).toBe('inside')
    await fs.writeFile('/alias/new.txt', 'ok')
    expect(await readFile(join(root, 'dir', 'new.txt'), 'utf8')).toBe('ok')
    expect(await fs.realpath('/alias/new.txt')).toBe('/dir/new.txt')
    const strict = new HostFileSystem({ root, writable: true, noFollow: true })
    expect(await code(strict.writeFile('/alias/x', 'x'))).toBe('ELOOP')
    expect((await strict.lstat('/alias')).isSymbolicLink()).toBe(true)
  })
})

test('a string instead of { root } is a clear TypeError at construction', () => {
  expect(() => new HostFileSystem('/srv/project' as never)).toThrow(
    /HostFileSystem takes \{ root: string.*new HostFileSystem\(\{ root: "\/srv\/project" \}\)/,
  )
})
