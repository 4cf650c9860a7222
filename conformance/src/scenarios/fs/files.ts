import type { Scenario } from '../../harness.js'
import { type FsFactory, plainFs } from './factory.js'

export const fsFiles = (makeFs: FsFactory = plainFs, prefix = 'fs'): Scenario => ({
  id: `${prefix}/files`,
  description: 'create, overwrite, append, truncate, copy and delete files across chunk boundaries',
  chunkSize: 64,
  async run(context) {
    const fs = await makeFs(context)
    await fs.mkdir('/docs/notes', { recursive: true })
    await fs.writeFile('/docs/readme.md', '# Read me\n')
    const big = new Uint8Array(300).map((_, i) => (i * 7 + 3) & 255)
    await fs.writeFile('/docs/big.bin', big)
    await fs.appendFile('/docs/readme.md', 'More text.\n')
    await fs.writeFile('/docs/notes/todo.txt', 'one\ntwo\n')
    await fs.truncate('/docs/big.bin', 130)
    await fs.truncate('/docs/notes/todo.txt', 200)
    await fs.copyFile('/docs/readme.md', '/docs/copy.md')
    await fs.writeFile('/docs/readme.md', 'rewritten')
    await fs.writeFile('/gone.txt', 'temporary')
    await fs.unlink('/gone.txt')
    const stat = await fs.stat('/docs/big.bin')
    return {
      tree: await fs.readdir('/', { recursive: true }),
      readme: await fs.readFile('/docs/readme.md', 'utf8'),
      copy: await fs.readFile('/docs/copy.md', 'utf8'),
      big: { size: stat.size, version: stat.version, mode: stat.mode },
    }
  },
})
