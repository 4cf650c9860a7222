import type { Scenario } from '../../harness.js'
import { type FsFactory, plainFs } from './factory.js'

export const fsLinks = (makeFs: FsFactory = plainFs, prefix = 'fs'): Scenario => ({
  id: `${prefix}/links-and-renames`,
  description: 'hard links, symlinks, renames that replace, recursive removal',
  async run(context) {
    const fs = await makeFs(context)
    await fs.mkdir('/a/b', { recursive: true })
    await fs.mkdir('/c')
    await fs.writeFile('/a/b/file', 'content')
    await fs.link('/a/b/file', '/c/hard')
    await fs.symlink('../a/b/file', '/c/soft')
    await fs.symlink('/a', '/abs')
    await fs.writeFile('/c/other', 'other')
    await fs.rename('/c/other', '/c/hard')
    await fs.rename('/a/b', '/c/b')
    await fs.mkdir('/trash/deep/er', { recursive: true })
    await fs.writeFile('/trash/deep/er/x', 'x')
    await fs.rm('/trash', { recursive: true })
    await fs.chmod('/c/b/file', 0o600)
    await fs.utimes('/c/b/file', 1_700_000_000, 1_700_000_001.25)
    return {
      tree: await fs.readdir('/', { recursive: true }),
      soft: await fs.readlink('/c/soft'),
      softResolves: await fs.exists('/c/soft'),
      hard: await fs.readFile('/c/hard', 'utf8'),
      fileNlink: (await fs.stat('/c/b/file')).nlink,
      realpath: await fs.realpath('/abs'),
    }
  },
})
