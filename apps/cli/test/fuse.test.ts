import { spawnSync } from 'node:child_process'
import { closeSync, existsSync, fsyncSync, openSync, readdirSync, readFileSync } from 'node:fs'
import { mkdir, readFile, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { AgentFS } from '@agentfs/sdk'
import { HOSTILE_BASE, HOSTILE_CASES } from '@agentfs/test-kit'
import Database from 'better-sqlite3'
import { describe, expect, test } from 'vitest'
import { fuseLimitation } from '../src/fuse.js'
import { fuseTests, runCli, sh, snapshot, startMountIn, useCliSandbox } from './helpers.js'

const fuse = fuseTests('FUSE mount tests')

let cli: string
let cwd: string
useCliSandbox('agentfs-fuse-', (sandbox) => {
  ;({ cli, cwd } = sandbox)
})

/** Starts `agentfs mount` and resolves once it reports the mount. */
const startMount = (db: string, mountpoint: string, ...flags: string[]) =>
  startMountIn({ cli, cwd }, db, mountpoint, ...flags)

const mounted = (mountpoint: string) =>
  readFileSync('/proc/mounts', 'utf8')
    .split('\n')
    .some((line) => line.split(' ')[1] === mountpoint)

/** Real shell tools, run once on the mount and once on a plain directory. */
const SCRIPT = String.raw`
mkdir -p src/lib docs
printf 'hello\n' > src/a.txt
echo appended >> src/a.txt
seq 1 60000 > src/lib/numbers.txt
head -c 300000 /dev/zero | tr '\0' 'x' > big.bin
cp -r src copy
mv copy/a.txt copy/b.txt
ln -s a.txt src/link
cat src/link
chmod 600 src/a.txt
chmod 700 src/lib
touch -d '2020-01-02 03:04:05' src/a.txt
stat -c '%y %n' src/a.txt
touch empty.txt
touch -m -d '2021-03-04 05:06:07' empty.txt && stat -c '%y %n' empty.txt
ls -la src | awk 'NR > 1 && $9 != "." && $9 != ".." { print $1, ($1 ~ /^d/ ? "-" : $5), $9 }'
rm -r copy/lib
for i in 1 2 3 4 5 6 7 8; do (seq 1 "$((i * 3000))" > "par$i.txt") & done; wait
cat par*.txt | wc -l
truncate -s 100 src/lib/numbers.txt
git init -q repo
cd repo
git config user.email agent@example.com
git config user.name agent
echo one > f.txt && mkdir sub && echo two > sub/g.txt
git add . && git commit -qm first
echo three >> f.txt && git commit -qam second
git mv sub/g.txt sub/h.txt && git commit -qm rename
git rev-parse HEAD
git log --format=%s
git status --porcelain
git fsck --no-progress
cd ..
mkdir unpacked && tar xf "$TARBALL" -C unpacked
stat -c '%a %y %n' unpacked/pkg/bin/tool
rm -r docs
ls -R | wc -l
`

describe.skipIf(!fuse)('agentfs mount (FUSE)', () => {
  test('shell tools behave on the mount exactly as on a plain directory; the database is fsck-clean after', async () => {
    // A tarball with modes, times and a symlink, made on a plain directory.
    const pack = join(cwd, 'pack')
    await mkdir(pack, { recursive: true })
    sh(
      `mkdir -p pkg/bin && printf '#!/bin/sh\necho tool\n' > pkg/bin/tool && chmod 751 pkg/bin/tool
       touch -d '2019-05-06 07:08:09' pkg/bin/tool && ln -s bin/tool pkg/run && tar cf ../pack.tar pkg`,
      pack,
    )
    const env = {
      TARBALL: join(cwd, 'pack.tar'),
      HOME: cwd,
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_AUTHOR_DATE: '2024-01-01T00:00:00Z',
      GIT_COMMITTER_DATE: '2024-01-01T00:00:00Z',
      TZ: 'UTC',
    }
    const plain = join(cwd, 'plain')
    await mkdir(plain)
    const expected = sh(SCRIPT, plain, env)

    expect(runCli(cli, ['init', 'shell.db'], { cwd }).code).toBe(0)
    const mountpoint = join(cwd, 'mnt')
    const m = await startMount('shell.db', mountpoint)
    try {
      expect(mounted(mountpoint)).toBe(true)
      const actual = sh(SCRIPT, mountpoint, env)
      expect(actual).toBe(expected)
      expect(expected).toContain('-rw------- 15 a.txt')
      const skipGit = (rel: string) => rel === 'repo/.git'
      expect(await snapshot(mountpoint, skipGit)).toEqual(await snapshot(plain, skipGit))
    } finally {
      expect(await m.stop()).toBe(0)
    }
    expect(m.output().out).toContain('unmounted')
    expect(mounted(mountpoint)).toBe(false)
    const fsck = runCli(cli, ['fsck', 'shell.db'], { cwd })
    expect(fsck).toMatchObject({ code: 0 })
  }, 120_000)

  test('the SDK keeps using the database while it is mounted; SIGINT unmounts', async () => {
    expect(runCli(cli, ['init', 'shared.db'], { cwd }).code).toBe(0)
    const mountpoint = join(cwd, 'shared')
    const m = await startMount('shared.db', mountpoint)
    const agent = await AgentFS.open({ path: join(cwd, 'shared.db') })
    try {
      await agent.fs.writeFile('/from-sdk.txt', 'written by the SDK\n')
      expect(sh('cat from-sdk.txt', mountpoint)).toBe('written by the SDK\n')
      sh('echo "written through the mount" > from-shell.txt', mountpoint)
      expect(await agent.fs.readFile('/from-shell.txt', 'utf8')).toBe('written through the mount\n')
      await agent.kv.set('still', 'works')
      expect(await agent.kv.get('still')).toBe('works')
    } finally {
      await agent.close()
      expect(await m.stop('SIGINT')).toBe(0)
    }
    expect(mounted(mountpoint)).toBe(false)
  }, 60_000)

  test('changes made elsewhere reach the kernel at once, not after its cache timeout; the mount tags its own', async () => {
    expect(runCli(cli, ['init', 'fresh.db'], { cwd }).code).toBe(0)
    const mountpoint = join(cwd, 'fresh')
    const m = await startMount('fresh.db', mountpoint)
    const agent = await AgentFS.open({ path: join(cwd, 'fresh.db') })
    const inMount = (name: string) => join(mountpoint, name)
    try {
      await agent.fs.writeFile('/f.txt', 'one\n')
      sh('echo mine > mine.txt', mountpoint)
      // The kernel now caches f.txt's attributes and data, and that later.txt is not there.
      expect(await readFile(inMount('f.txt'), 'utf8')).toBe('one\n')
      await expect(stat(inMount('later.txt'))).rejects.toMatchObject({ code: 'ENOENT' })
      const cached = Date.now()
      await agent.fs.writeFile('/f.txt', 'two, longer\n')
      await agent.fs.writeFile('/later.txt', 'now here\n')
      // Read through the mount until both show the change; without invalidation they cannot
      // before the kernel's 1 s timeouts run out.
      const read = (name: string) => readFile(inMount(name), 'utf8').catch(() => undefined)
      let seen: [string | undefined, string | undefined] = [undefined, undefined]
      let fresh = Number.POSITIVE_INFINITY
      while (Date.now() - cached < 900) {
        seen = [await read('f.txt'), await read('later.txt')]
        if (seen[0] === 'two, longer\n' && seen[1] === 'now here\n') {
          fresh = Date.now() - cached
          break
        }
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      expect(seen).toEqual(['two, longer\n', 'now here\n'])
      expect(fresh).toBeLessThan(900)
      const sessions = (await agent.changes.since(0, { path: '/mine.txt' })).changes.map(
        (c) => c.sessionId,
      )
      expect(sessions.length).toBeGreaterThan(0)
      for (const session of sessions) expect(session).toMatch(/^mount:[0-9a-f]{8}$/)
    } finally {
      await agent.close()
      expect(await m.stop()).toBe(0)
    }
  }, 60_000)

  test("--commit-delay groups the mount's commits: another connection sees a change after fsync, at the latest after the delay or unmount", async () => {
    expect(runCli(cli, ['init', 'grouped.db'], { cwd }).code).toBe(0)
    const mountpoint = join(cwd, 'grouped')
    const m = await startMount('grouped.db', mountpoint, '--commit-delay', '1000')
    const watcher = new Database(join(cwd, 'grouped.db'), { readonly: true })
    const stored = (name: string) =>
      (
        watcher.prepare('SELECT count(*) AS n FROM fs_dentry WHERE name = ?').get(name) as {
          n: number
        }
      ).n === 1
    try {
      sh('echo one > one.txt', mountpoint)
      // Written, and read back through the mount, but not yet committed.
      expect(await readFile(join(mountpoint, 'one.txt'), 'utf8')).toBe('one\n')
      expect(stored('one.txt')).toBe(false)
      const fd = openSync(join(mountpoint, 'one.txt'), 'r+')
      try {
        fsyncSync(fd)
      } finally {
        closeSync(fd)
      }
      expect(stored('one.txt')).toBe(true)
      sh('echo two > two.txt', mountpoint)
      let waited = Number.POSITIVE_INFINITY
      const start = Date.now()
      while (Date.now() - start < 3000) {
        if (stored('two.txt')) {
          waited = Date.now() - start
          break
        }
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      expect(waited).toBeLessThan(3000)
      sh('echo three > three.txt', mountpoint)
    } finally {
      expect(await m.stop()).toBe(0)
    }
    // Unmounting commits what was left.
    expect(stored('three.txt')).toBe(true)
    watcher.close()
    expect(runCli(cli, ['fs', 'cat', 'grouped.db', '/three.txt'], { cwd }).out).toBe('three\n')
    const bad = runCli(cli, ['mount', '--commit-delay', '5000', 'grouped.db', mountpoint], { cwd })
    expect(bad.code).toBe(1)
    expect(bad.err).toMatch(/--commit-delay expects whole milliseconds from 0 to 1000, got "5000"/)
  }, 60_000)

  test('--read-only refuses changes with EROFS; overlay databases mount their copy-on-write view', async () => {
    const host = join(cwd, 'host')
    await mkdir(host, { recursive: true })
    sh('mkdir -p lib && echo base > lib/base.txt', host)
    expect(runCli(cli, ['init', 'ov.db', '--base', host], { cwd }).code).toBe(0)
    const ro = await startMount('ov.db', join(cwd, 'ro'), '--read-only')
    try {
      expect(sh('cat lib/base.txt', join(cwd, 'ro'))).toBe('base\n')
      expect(() => sh('touch new.txt', join(cwd, 'ro'))).toThrow(/Read-only file system/)
    } finally {
      expect(await ro.stop()).toBe(0)
    }
    const rw = await startMount('ov.db', join(cwd, 'rw'))
    try {
      sh('echo changed > lib/base.txt && echo new > new.txt && rm -r lib', join(cwd, 'rw'))
    } finally {
      expect(await rw.stop()).toBe(0)
    }
    expect(readFileSync(join(host, 'lib', 'base.txt'), 'utf8')).toBe('base\n')
    const diff = runCli(cli, ['diff', 'ov.db'], { cwd }).out
    expect(diff).toContain('A /new.txt')
    expect(diff).toContain('D /lib/')
  }, 60_000)

  test('a missing mountpoint is one clear error line', () => {
    runCli(cli, ['init', 'e.db'], { cwd })
    const result = runCli(cli, ['mount', 'e.db', join(cwd, 'nowhere')], { cwd })
    expect(result.code).toBe(1)
    expect(result.err).toMatch(/^agentfs: mountpoint .*nowhere does not exist; create it/)
  })
})

describe.skipIf(!fuse)('agentfs mount of a hostile database', () => {
  const CASES = [
    'dentry ../victim.txt',
    'dentry named .',
    'empty dentry name',
    'directory inside itself',
    'two-way cycle',
    'chunk stored as TEXT',
    'huge size without chunks',
  ]
  test.each(CASES)(
    '%s: shell tools on the mount finish, typed; the mount stays up; nothing lands outside',
    async (name) => {
      const hostile = HOSTILE_CASES.find((c) => c.name === name)!
      const index = HOSTILE_CASES.indexOf(hostile)
      const db = join(cwd, `hostile-mount-${index}.db`)
      const agent = await AgentFS.open({ path: db })
      for (const d of HOSTILE_BASE.dirs) await agent.fs.mkdir(d)
      for (const [file, content] of Object.entries(HOSTILE_BASE.files))
        await agent.fs.writeFile(file, content)
      await agent.close()
      const { default: Database } = await import('better-sqlite3')
      const raw = new Database(db)
      raw.exec(hostile.sql)
      raw.close()
      const mountpoint = join(cwd, `hostile-mnt-${index}`)
      const out = join(cwd, `hostile-out-${index}`)
      await mkdir(out)
      const mount = await startMount(db, mountpoint)
      try {
        for (const command of [
          'find .',
          'ls -laR .',
          'cat dir/sub/file.txt top.txt',
          `cp -r . ${out}/copy`,
          'grep -r hello .',
          // A rename into the tree: the inside-check walks up through every parent.
          'mkdir -p moving && mv moving dir/sub/',
          'du -a .',
        ]) {
          const result = spawnSync('bash', ['-c', `timeout 20 ${command}`], {
            cwd: mountpoint,
            encoding: 'utf8',
          })
          expect(result.status, `${command} timed out on ${name}`).not.toBe(124)
        }
        expect(mounted(mountpoint)).toBe(true)
        // Only the copy's own folder was written.
        expect(readdirSync(out)).toEqual(readdirSync(out).length === 0 ? [] : ['copy'])
        expect(existsSync(join(cwd, 'victim.txt'))).toBe(false)
      } finally {
        expect(await mount.stop()).toBe(0)
      }
    },
    180_000,
  )
})

describe.skipIf(!fuse)('agentfs mount of a database with an overlong name', () => {
  test('a name longer than the kernel takes is left out of the listing and reported; the rest lists', async () => {
    const db = join(cwd, 'long-name.db')
    const agent = await AgentFS.open({ path: db })
    await agent.fs.writeFile('/a.txt', 'a\n')
    await agent.fs.writeFile('/z.txt', 'z\n')
    await agent.close()
    const { default: Database } = await import('better-sqlite3')
    const raw = new Database(db)
    raw
      .prepare(
        "INSERT INTO fs_dentry (name, parent_ino, ino) SELECT ?, 1, ino FROM fs_dentry WHERE name = 'a.txt'",
      )
      .run('n'.repeat(300))
    raw.close()
    const mount = await startMount(db, join(cwd, 'long-name'))
    try {
      expect(sh('ls', join(cwd, 'long-name'))).toBe('a.txt\nz.txt\n')
      // The report comes through the mount's stderr pipe: let it arrive.
      for (let i = 0; i < 40 && !mount.output().err.includes('holds'); i++)
        await new Promise((resolve) => setTimeout(resolve, 50))
      expect(mount.output().err).toMatch(
        /agentfs mount: \/ holds 1 name\(s\) longer than 255 bytes, left out of the listing; run agentfs fsck/,
      )
    } finally {
      expect(await mount.stop()).toBe(0)
    }
  }, 60_000)
})

describe('fuse-native build check', () => {
  test('an unpatched fuse-native is named at mount time; the patched one in this repository is not', async () => {
    const { mkdtemp, writeFile } = await import('node:fs/promises')
    const { tmpdir } = await import('node:os')
    const dir = await mkdtemp(join(tmpdir(), 'agentfs-fuse-src-'))
    await writeFile(join(dir, 'upstream.c'), 'static int x = 1; /* no omit flag */\n')
    await writeFile(join(dir, 'patched.c'), 'ops.flag_utime_omit_ok = 1;\n')
    expect(fuseLimitation(join(dir, 'upstream.c'))).toMatch(/modification times .* are lost/)
    expect(fuseLimitation(join(dir, 'patched.c'))).toBeUndefined()
    // The workspace installs the patched build.
    expect(fuseLimitation()).toBeUndefined()
  })
})

describe.skipIf(!fuse)('agentfs mount of a synced database', () => {
  test('the mount pushes and pulls in the background: writes cross between the mount and another copy', async () => {
    const { startSyncServer } = await import('@agentfs/turso-sync-server')
    const server = await startSyncServer({ maxSeconds: 120 })
    try {
      expect(runCli(cli, ['init', '--sync-url', server.url, 'm1.db'], { cwd }).code).toBe(0)
      expect(runCli(cli, ['init', '--sync-url', server.url, 'm2.db'], { cwd }).code).toBe(0)
      const mountpoint = join(cwd, 'synced-mnt')
      const mount = await startMount('m1.db', mountpoint, '--sync-interval', '100')
      try {
        sh('echo "written through the mount" > from-mount.txt', mountpoint)
        runCli(cli, ['fs', 'write', 'm2.db', '/from-cli.txt', 'written by another copy'], { cwd })
        runCli(cli, ['sync', 'push', 'm2.db'], { cwd })
        const until = async (check: () => boolean) => {
          const deadline = Date.now() + 20_000
          while (!check() && Date.now() < deadline)
            await new Promise((resolve) => setTimeout(resolve, 100))
          return check()
        }
        expect(await until(() => existsSync(join(mountpoint, 'from-cli.txt')))).toBe(true)
        expect(readFileSync(join(mountpoint, 'from-cli.txt'), 'utf8')).toBe(
          'written by another copy',
        )
        const seen = await until(() => {
          runCli(cli, ['sync', 'pull', 'm2.db'], { cwd })
          return runCli(cli, ['fs', 'cat', 'm2.db', '/from-mount.txt'], { cwd }).out !== ''
        })
        expect(seen).toBe(true)
        expect(runCli(cli, ['fs', 'cat', 'm2.db', '/from-mount.txt'], { cwd }).out).toBe(
          'written through the mount\n',
        )
      } finally {
        expect(await mount.stop()).toBe(0)
      }
    } finally {
      await server.stop()
    }
  }, 60_000)
})

describe.skipIf(!fuse)('the change feed of a mounted database', () => {
  test('fs.watch and the feed in another process see what shell tools do through the mount', async () => {
    runCli(cli, ['init', 'watched.db'], { cwd })
    const mountpoint = join(cwd, 'mnt-watched')
    const mount = await startMount('watched.db', mountpoint)
    const agent = await AgentFS.open({ path: join(cwd, 'watched.db') })
    const controller = new AbortController()
    const timer = setTimeout(() => controller.abort(), 15_000)
    try {
      const seen: string[] = []
      const watching = (async () => {
        for await (const e of agent.fs.watch('/', {
          recursive: true,
          signal: controller.signal,
          intervalMs: 20,
        })) {
          seen.push(`${e.eventType} ${String(e.filename)}`)
          if (seen.includes('rename notes/b.txt')) return
        }
      })().catch((error: Error) => {
        if (error.name !== 'AbortError') throw error
      })
      await new Promise((resolve) => setTimeout(resolve, 100))
      sh('mkdir notes && echo hi > notes/a.txt && mv notes/a.txt notes/b.txt', mountpoint)
      await watching
      expect(seen).toContain('rename notes')
      expect(seen).toContain('rename notes/a.txt')
      expect(seen).toContain('rename notes/b.txt')
      const ops = (await agent.changes.since(0)).changes.map((c) => `${c.op} ${c.path}`)
      expect(ops).toContain('mkdir /notes')
      expect(ops).toContain('rename /notes/a.txt')
    } finally {
      clearTimeout(timer)
      controller.abort()
      await agent.close()
      expect(await mount.stop()).toBe(0)
    }
  }, 60_000)
})
