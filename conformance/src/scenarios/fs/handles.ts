import type { Scenario } from '../../harness.js'
import { type FsFactory, plainFs } from './factory.js'

export const fsHandles = (makeFs: FsFactory = plainFs, prefix = 'fs'): Scenario => ({
  id: `${prefix}/handles`,
  description:
    'file handles: cursor writes, pwrite past the end (zero fill), append, special files',
  chunkSize: 64,
  async run(context) {
    const fs = await makeFs(context)
    const handle = await fs.open('/log', 'w+')
    await handle.write('first line\n')
    await handle.write(new TextEncoder().encode('END'), 0, 3, 200)
    await handle.close()
    const appender = await fs.open('/log', 'a')
    await appender.write('appended\n')
    await appender.close()
    await fs.mknod('/fifo', 0o010644)
    await fs.mknod('/dev-null', 0o020666, (1 << 8) | 3)
    const stat = await fs.stat('/log')
    return {
      size: stat.size,
      entries: await fs.readdir('/'),
      head: (await fs.readFile('/log')).subarray(0, 11).toString(),
    }
  },
})
