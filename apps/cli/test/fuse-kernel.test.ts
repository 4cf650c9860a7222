import type { PlusListing, Request } from '@agentfs/fuse'
import { AgentFS } from '@agentfs/sdk'
import { describe, expect, test } from 'vitest'
import { kernelOperations } from '../src/fuse-kernel.js'

/** A request as the binding delivers it: only what the operation reads matters. */
const request = (fields: Partial<Request>): Request => ({
  ino: 1,
  ino2: 0,
  fh: 0,
  flags: 0,
  mode: 0,
  rdev: 0,
  size: 4096,
  offset: 0,
  length: 0,
  datasync: 0,
  uid: 0,
  gid: 0,
  pid: 0,
  umask: 0,
  ...fields,
})

// The kernel operations without a kernel: the node table's bookkeeping, call by call.
describe('the mount’s node table', () => {
  test('a node sent in one listing survives another listing of the same directory being released', async () => {
    const agent = await AgentFS.open({ path: ':memory:' })
    try {
      await agent.fs.writeFile('/a.txt', 'a')
      const ops = kernelOperations(agent.fs, { uid: 0, gid: 0 })
      const first = await ops.opendir!(request({ ino: 1 }))
      const second = await ops.opendir!(request({ ino: 1 }))
      const one = (await ops.readdirplus!(request({ ino: 1, fh: first.fh }))) as PlusListing
      const two = (await ops.readdirplus!(request({ ino: 1, fh: second.fh }))) as PlusListing
      const index = two.names.indexOf('a.txt')
      const nodeid = two.entries[index]?.nodeid as number
      expect(one.entries[index]?.nodeid).toBe(nodeid)
      // The first listing is released before the second one's reply is counted.
      await ops.releasedir!(request({ ino: 1, fh: first.fh }))
      two.sent?.(0, two.names.length)
      await ops.releasedir!(request({ ino: 1, fh: second.fh }))
      // The kernel holds a reference from the second reply: the node must still be known.
      expect((await ops.getattr!(request({ ino: nodeid }))).size).toBe(1)
      ops.forget!(nodeid, 1)
      await expect(ops.getattr!(request({ ino: nodeid }))).rejects.toMatchObject({ code: 'ESTALE' })
    } finally {
      await agent.close()
    }
  })

  test('a changed path names only what the kernel can hold: no entry for a name it cannot take', async () => {
    const agent = await AgentFS.open({ path: ':memory:' })
    try {
      const ops = kernelOperations(agent.fs, { uid: 0, gid: 0 })
      expect(ops.cachedFor('/a.txt')).toEqual({ nodes: [1], entry: [1, 'a.txt'] })
      // A feed row of a damaged database: no name of 256 bytes is in the kernel's cache, and
      // asking the kernel to drop one would be refused.
      expect(ops.cachedFor(`/${'x'.repeat(256)}`)).toEqual({ nodes: [1] })
      expect(ops.cachedFor('/')).toEqual({ nodes: [1] })
    } finally {
      await agent.close()
    }
  })

  test('a new inode for another user is created with its owner in one transaction: a refused chown leaves nothing', async () => {
    const agent = await AgentFS.open({ path: ':memory:' })
    try {
      // A filesystem that refuses every chown: the create must not happen without it.
      const ops = kernelOperations(agent.fs.restrict({ deny: ['chown'] }), { uid: 0, gid: 0 })
      const other = { uid: 1000, gid: 1000 }
      const calls = [
        ops.mknod!(request({ ino: 1, name: 'file', mode: 0o100644, ...other })),
        ops.mknod!(request({ ino: 1, name: 'fifo', mode: 0o010644, ...other })),
        ops.mkdir!(request({ ino: 1, name: 'dir', mode: 0o755, ...other })),
        ops.symlink!(request({ ino: 1, name: 'link', name2: 'file', ...other })),
      ]
      for (const call of calls) await expect(call).rejects.toMatchObject({ code: 'EPERM' })
      expect(await agent.fs.readdir('/')).toEqual([])
      // The mount's own user needs no chown: that still works.
      await ops.mknod!(request({ ino: 1, name: 'mine', mode: 0o100644 }))
      expect(await agent.fs.readdir('/')).toEqual(['mine'])
      // And another user's file gets its owner where chown is allowed.
      const open = kernelOperations(agent.fs, { uid: 0, gid: 0 })
      await open.mknod!(request({ ino: 1, name: 'theirs', mode: 0o100644, ...other }))
      await open.mkdir!(request({ ino: 1, name: 'their-dir', mode: 0o755, ...other }))
      for (const name of ['theirs', 'their-dir'])
        expect(await agent.fs.lstat(`/${name}`)).toMatchObject({ uid: 1000, gid: 1000 })
    } finally {
      await agent.close()
    }
  })

  test('lookup and getattr read by inode: a directory renamed elsewhere answers through its node', async () => {
    const agent = await AgentFS.open({ path: ':memory:' })
    try {
      await agent.fs.mkdir('/a/sub', { recursive: true })
      await agent.fs.writeFile('/a/f', 'xyz')
      const ops = kernelOperations(agent.fs, { uid: 0, gid: 0 })
      const a = await ops.lookup!(request({ ino: 1, name: 'a' }))
      expect(a.attr.nlink).toBe(3)
      // Renamed by another process: the kernel still holds node `a` and asks by it.
      await agent.fs.rename('/a', '/b')
      const f = await ops.lookup!(request({ ino: a.nodeid, name: 'f' }))
      expect(f.attr.size).toBe(3)
      expect(f.attr.ino).toBe((await agent.fs.lstat('/b/f')).ino)
      expect((await ops.getattr!(request({ ino: a.nodeid }))).nlink).toBe(3)
      await expect(ops.lookup!(request({ ino: a.nodeid, name: 'gone' }))).rejects.toMatchObject({
        code: 'ENOENT',
      })
      // Freed: the node's inode is gone, whatever name it had.
      await agent.fs.rm('/b', { recursive: true })
      await expect(ops.getattr!(request({ ino: a.nodeid }))).rejects.toMatchObject({
        code: 'ENOENT',
      })
    } finally {
      await agent.close()
    }
  })
})
