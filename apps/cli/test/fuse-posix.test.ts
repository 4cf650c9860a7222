import { spawnSync } from 'node:child_process'
import {
  closeSync,
  fstatSync,
  ftruncateSync,
  openSync,
  readSync,
  renameSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from 'node:fs'
import { chmod, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { describe, expect, test } from 'vitest'
import { fuseTests, runCli, sh, startMountIn, useCliSandbox } from './helpers.js'

/**
 * POSIX behaviour of `agentfs mount` for every user (run as root, which may act as others):
 * permissions of other users, sticky and setgid directories, chown rules, hard links as one
 * inode, directory link counts, ctime, a huge truncate, files unlinked while open, and an
 * unmount from outside.
 */
const fuse = fuseTests('FUSE POSIX tests')
const root = process.getuid?.() === 0

let cli: string
let cwd: string
useCliSandbox('agentfs-posix-', (sandbox) => {
  ;({ cli, cwd } = sandbox)
})

const NOBODY = 65534

/** Runs `script` in `dir` as user `uid` (group `gid`): exit status and output. */
function as(uid: number, script: string, dir: string, gid = uid) {
  const result = spawnSync('sh', ['-c', script], { cwd: dir, uid, gid, encoding: 'utf8' })
  return { status: result.status, out: result.stdout.trim(), err: result.stderr.trim() }
}

async function mounted(name: string, ...flags: string[]) {
  // Other users must reach the mountpoint: the sandbox is private (0700) otherwise.
  await chmod(cwd, 0o755)
  const mountpoint = join(cwd, name)
  runCli(cli, ['init', `${name}.db`], { cwd })
  const m = await startMountIn({ cli, cwd }, `${name}.db`, mountpoint, ...flags)
  return { mountpoint, ...m }
}

describe.skipIf(!fuse || !root)('POSIX on the mount, for every user', () => {
  test('other users: the kernel checks modes against the caller; new inodes are the caller’s', async () => {
    const { mountpoint: mp, stop } = await mounted('perm')
    try {
      sh('mkdir open closed && chmod 777 open && chmod 700 closed', mp)
      sh('echo public > pub && echo secret > sec && chmod 644 pub && chmod 600 sec', mp)
      expect(as(NOBODY, 'cat pub', mp)).toMatchObject({ status: 0, out: 'public' })
      expect(as(NOBODY, 'cat sec', mp).err).toMatch(/Permission denied/)
      expect(as(NOBODY, 'ls closed', mp).err).toMatch(/Permission denied/)
      expect(as(NOBODY, 'touch here', mp).err).toMatch(/Permission denied/)
      expect(as(NOBODY, 'echo mine > open/f && mkdir open/d', mp).status).toBe(0)
      expect(sh('stat -c "%u:%g %n" open/f open/d', mp)).toBe(
        `${NOBODY}:${NOBODY} open/f\n${NOBODY}:${NOBODY} open/d\n`,
      )
    } finally {
      await stop()
    }
  })

  test('sticky and setgid directories; chown rules', async () => {
    const { mountpoint: mp, stop } = await mounted('dirs')
    try {
      sh('mkdir tmp && chmod 1777 tmp && echo r > tmp/roots && chmod 666 tmp/roots', mp)
      expect(as(NOBODY, 'echo n > tmp/nobodys', mp).status).toBe(0)
      // Writable by all, but the sticky bit keeps others' names: only the owner removes it.
      expect(as(NOBODY, 'rm -f tmp/roots', mp).err).toMatch(/Operation not permitted/)
      expect(as(NOBODY, 'mv tmp/roots tmp/x', mp).err).toMatch(/Operation not permitted/)
      expect(as(NOBODY, 'rm tmp/nobodys', mp).status).toBe(0)
      expect(sh('ls tmp', mp)).toBe('roots\n')

      sh('mkdir shared && chgrp 100 shared && chmod 2777 shared', mp)
      expect(as(NOBODY, 'touch shared/f && mkdir shared/d', mp).status).toBe(0)
      expect(sh('stat -c "%u:%g %A %n" shared/f shared/d', mp)).toBe(
        `${NOBODY}:100 -rw-r--r-- shared/f\n${NOBODY}:100 drwxr-sr-x shared/d\n`,
      )

      // Only root gives a file away; the owner may pick among its own groups only.
      expect(as(NOBODY, 'chown 0 shared/f', mp).err).toMatch(/Operation not permitted/)
      expect(as(NOBODY, 'chgrp 0 shared/f', mp).err).toMatch(/Operation not permitted/)
      expect(as(NOBODY, 'chmod 600 tmp/roots', mp).err).toMatch(/Operation not permitted/)
      sh('chown 1234:4321 shared/f', mp)
      expect(sh('stat -c "%u:%g" shared/f', mp)).toBe('1234:4321\n')
      // A write by someone else clears setuid, as the kernel does for any filesystem.
      sh('echo x > suid && chmod 4777 suid', mp)
      expect(as(NOBODY, 'echo y >> suid', mp).status).toBe(0)
      expect(sh('stat -c "%a" suid', mp)).toBe('777\n')
    } finally {
      await stop()
    }
  })

  test('hard links are one inode; directory nlink is 2 + subdirectories; ctime moves', async () => {
    const { mountpoint: mp, stop } = await mounted('links')
    try {
      sh('echo a > a && ln a b && mkdir d d/e d/f', mp)
      const [ia, ib] = sh('stat -c "%i %h" a b', mp).trim().split('\n')
      expect(ia).toBe(ib)
      expect(ia?.split(' ')[1]).toBe('2')
      sh('chmod 600 a', mp)
      expect(sh('stat -c "%a" b', mp)).toBe('600\n')
      const before = sh('stat -c %Z b', mp)
      await new Promise((r) => setTimeout(r, 1100))
      sh('ln a c', mp)
      expect(Number(sh('stat -c %Z b', mp))).toBeGreaterThan(Number(before))
      expect(sh('stat -c %h a', mp)).toBe('3\n')
      sh('rm a', mp)
      expect(sh('stat -c %h b && cat c', mp)).toBe('2\na\n')

      expect(sh('stat -c "%h %n" . d d/e', mp)).toBe('3 .\n4 d\n2 d/e\n')
      sh('rmdir d/f', mp)
      expect(sh('stat -c %h d', mp)).toBe('3\n')
    } finally {
      await stop()
    }
  })

  test('a file unlinked while open lives on until its last close, then is freed', async () => {
    const { mountpoint: mp, stop } = await mounted('orphans')
    const at = (name: string) => join(mp, name)
    const bytes = (fd: number, length = 64) => {
      const buffer = Buffer.alloc(length)
      return buffer.subarray(0, readSync(fd, buffer, 0, length, 0)).toString()
    }
    /** Inodes without links, and orphan records, as another connection sees them. */
    const orphans = () => {
      const db = new Database(join(cwd, 'orphans.db'), { readonly: true })
      try {
        const row = db
          .prepare(
            "SELECT (SELECT count(*) FROM fs_inode WHERE nlink = 0) AS inodes, (SELECT count(*) FROM agentfs_meta WHERE key LIKE 'orphan.%') AS records",
          )
          .get()
        return row as { inodes: number; records: number }
      } finally {
        db.close()
      }
    }
    const fds: number[] = []
    let again: { stop: () => Promise<unknown> } | undefined
    try {
      writeFileSync(at('a'), 'abc')
      writeFileSync(at('untouched'), 'from before')
      await stop()
      // A second mount of the database: it never opened `untouched` before the unlink.
      again = await startMountIn({ cli, cwd }, 'orphans.db', mp)
      const untouched = openSync(at('untouched'), 'r+')
      fds.push(untouched)
      unlinkSync(at('untouched'))
      expect(fstatSync(untouched).nlink).toBe(0)
      expect(bytes(untouched)).toBe('from before')
      writeSync(untouched, 'F', 0)
      expect(bytes(untouched)).toBe('From before')

      const a = openSync(at('a'), 'r+')
      fds.push(a)
      unlinkSync(at('a'))
      expect(fstatSync(a).nlink).toBe(0)
      writeSync(a, 'XY', 1)
      ftruncateSync(a, 10)
      expect(fstatSync(a).size).toBe(10)
      expect(bytes(a)).toBe('aXY\0\0\0\0\0\0\0')

      // A temporary file as SQLite and tmpfile(3) make them: created, unlinked, then used.
      const tmp = openSync(at('tmp'), 'wx+')
      fds.push(tmp)
      unlinkSync(at('tmp'))
      writeSync(tmp, 'x'.repeat(5000), 0)
      expect(bytes(tmp, 10000)).toHaveLength(5000)

      // A rename over an open file: the reader keeps the old content.
      writeFileSync(at('config'), 'old')
      const reader = openSync(at('config'), 'r')
      fds.push(reader)
      writeFileSync(at('config.new'), 'new')
      renameSync(at('config.new'), at('config'))
      expect(bytes(reader)).toBe('old')
      expect(await readFile(at('config'), 'utf8')).toBe('new')
      expect(sh('ls', mp)).toBe('config\n')
      expect(orphans()).toEqual({ inodes: 4, records: 4 })

      for (const fd of fds.splice(0)) closeSync(fd)
      // The kernel forgets a closed unlinked file at once; the mount then frees it.
      for (let i = 0; i < 100 && orphans().inodes > 0; i++)
        await new Promise((r) => setTimeout(r, 50))
      expect(orphans()).toEqual({ inodes: 0, records: 0 })
    } finally {
      for (const fd of fds) closeSync(fd)
      await (again ?? { stop }).stop()
    }
    expect(runCli(cli, ['fsck', 'orphans.db'], { cwd }).code).toBe(0)
  })

  test('a huge truncate is refused at once and the mount stays responsive', async () => {
    const { mountpoint: mp, stop } = await mounted('huge')
    try {
      sh('echo x > f', mp)
      const started = Date.now()
      const result = spawnSync('truncate', ['-s', '999999999999999', 'f'], {
        cwd: mp,
        encoding: 'utf8',
        timeout: 20_000,
      })
      expect(result.status).not.toBe(0)
      expect(result.stderr).toMatch(/too large/i)
      expect(Date.now() - started).toBeLessThan(10_000)
      expect(sh('stat -c %s f && df -P . | tail -1 | wc -l', mp)).toBe('2\n1\n')
    } finally {
      await stop()
    }
  })

  test('an unmount from outside ends agentfs mount with status 0; mount lists mounts', async () => {
    const { mountpoint: mp, child, output } = await mounted('outside')
    expect(runCli(cli, ['mount'], { cwd }).out).toContain(` on ${mp}`)
    const exited = new Promise<number | null>((resolve) => {
      child.removeAllListeners('exit')
      child.on('exit', resolve)
    })
    expect(spawnSync('umount', [mp]).status).toBe(0)
    expect(await exited).toBe(0)
    expect(output().out).toContain('was unmounted from outside')
    expect(runCli(cli, ['mount'], { cwd }).out).not.toContain(` on ${mp}`)
  })

  test('exec runs a command on a temporary mount and returns its status', async () => {
    runCli(cli, ['init', 'exec.db'], { cwd })
    const result = runCli(
      cli,
      [
        'exec',
        'exec.db',
        '--',
        'sh',
        '-c',
        'echo hi > made && test "$PWD" = "$AGENTFS_MOUNT"; exit 7',
      ],
      { cwd, timeout: 30_000 },
    )
    expect(result.err).toBe('')
    expect(result.code).toBe(7)
    const back = runCli(cli, ['fs', 'cat', 'exec.db', '/made'], { cwd })
    expect(back.out).toBe('hi\n')
    expect(await readFile('/proc/self/mountinfo', 'utf8')).not.toContain('agentfs-exec-')
  })
})
