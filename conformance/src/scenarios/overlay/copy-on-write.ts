import { createFileSystem } from '@agentfs/fs'
import { createOverlay } from '@agentfs/overlay'
import type { Scenario } from '../../harness.js'

export const overlayCopyOnWrite: Scenario = {
  id: 'overlay/copy-on-write',
  description:
    'copy-up with origins, whiteouts, an opaque re-created directory, renames over an AgentFS base',
  chunkSize: 64,
  async run({ db, openDatabase }) {
    const baseDb = await openDatabase()
    const base = createFileSystem(baseDb)
    await base.mkdir('/src/lib', { recursive: true })
    await base.writeFile('/src/lib/a.ts', 'export const a = 1\n'.repeat(8))
    await base.writeFile('/src/index.ts', "import './lib/a.js'\n")
    await base.writeFile('/README.md', '# Base\n')
    await base.symlink('README.md', '/latest')
    const overlay = await createOverlay({
      base,
      delta: createFileSystem(db),
      describeBase: { kind: 'agentfs', path: 'base.db' },
    })
    await overlay.appendFile('/src/lib/a.ts', '// edited\n')
    await overlay.unlink('/README.md')
    await overlay.rm('/src/lib', { recursive: true })
    await overlay.mkdir('/src/lib')
    await overlay.writeFile('/src/lib/b.ts', 'export const b = 2\n')
    await overlay.rename('/src/index.ts', '/src/main.ts')
    await overlay.symlink('src/main.ts', '/entry')
    return {
      tree: await overlay.readdir('/', { recursive: true }),
      baseTree: await base.readdir('/', { recursive: true }),
      changes: (await overlay.diff()).map((c) => `${c.kind} ${c.type} ${c.path}`),
      mainIno: (await overlay.stat('/src/main.ts')).ino === (await base.stat('/src/index.ts')).ino,
    }
  },
}
