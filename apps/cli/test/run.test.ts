import { spawn, spawnSync } from 'node:child_process'
import { existsSync, readdirSync } from 'node:fs'
import { mkdir, mkdtemp, rm, stat } from 'node:fs/promises'
import { type AddressInfo, createServer } from 'node:net'
import { join } from 'node:path'
import { describe, expect, test } from 'vitest'
import { fuseTests, runCli, sh, snapshot, useCliSandbox } from './helpers.js'

const fuse = fuseTests('agentfs run tests')
const root = process.getuid?.() === 0

let cli: string
let cwd: string
useCliSandbox('agentfs-run-', (sandbox) => {
  ;({ cli, cwd } = sandbox)
})

const PROJECT = String.raw`
mkdir -p src/util docs old/deep
printf 'export const a = 1\n' > src/index.ts
printf 'export const b = 2\n' > src/util/b.ts
printf '# Docs\n' > docs/README.md
printf 'gone\n' > old/deep/x.txt
printf '#!/bin/sh\necho hi\n' > run.sh && chmod 755 run.sh
ln -s src/index.ts entry
`

/** Creates, edits, renames and deletes; with a mount namespace it also writes by absolute path. */
const EDITS = String.raw`
echo 'export const c = 3' > src/c.ts
echo 'export const a = 10' > src/index.ts
mv docs/README.md docs/GUIDE.md
rm -r old
chmod 700 run.sh
mkdir -p build/out && seq 1 20000 > build/out/numbers.txt
if [ -n "\${ABSOLUTE:-}" ]; then echo absolute > "$ABSOLUTE/abs.txt"; fi
rm entry && ln -s src/c.ts entry
`

describe.skipIf(!fuse)('agentfs run', () => {
  test('edits land in the session database; the host stays untouched until commit, then equals the view', async () => {
    const project = join(cwd, 'project')
    const expected = join(cwd, 'expected')
    for (const dir of [project, expected]) {
      await mkdir(dir)
      sh(PROJECT, dir)
    }
    const before = await snapshot(project)

    const run = runCli(cli, ['run', '--db', '../session.db', '--', 'bash', '-euc', EDITS], {
      cwd: project,
      env: { ...process.env, ...(root ? { ABSOLUTE: project } : {}) },
    })
    expect(run.err).toMatch(/agentfs run: \d+ change\(s\) kept in \.\.\/session\.db/)
    expect(run.code).toBe(0)
    expect(await snapshot(project)).toEqual(before)

    sh(EDITS, expected, root ? { ABSOLUTE: expected } : {})
    const diff = runCli(cli, ['diff', '--json', '../session.db'], { cwd: project })
    const changes = (JSON.parse(diff.out) as { kind: string; path: string }[])
      .map((c) => `${c.kind} ${c.path}`)
      .sort()
    expect(changes).toEqual(
      [
        'added /build',
        'added /build/out',
        'added /build/out/numbers.txt',
        'added /docs/GUIDE.md',
        'added /src/c.ts',
        'deleted /docs/README.md',
        'deleted /old',
        'modified /entry',
        'modified /run.sh',
        'modified /src/index.ts',
        ...(root ? ['added /abs.txt'] : []),
      ].sort(),
    )

    const commit = runCli(cli, ['commit', '../session.db'], { cwd: project })
    expect(commit.code).toBe(0)
    expect(await snapshot(project)).toEqual(await snapshot(expected))
    expect(runCli(cli, ['diff', '../session.db'], { cwd: project }).out).toBe('no changes\n')
  }, 120_000)

  test("the command's exit code is the run's; a default session gets an id in the state directory, and the project gets nothing", async () => {
    const dir = join(cwd, 'plain')
    await mkdir(dir)
    sh('echo base > base.txt', dir)
    const state = join(cwd, 'plain-state')
    const env = { ...process.env, AGENTFS_STATE_DIR: state }
    const failed = runCli(cli, ['run', '--', 'sh', '-c', 'echo partial > out.txt; exit 3'], {
      cwd: dir,
      env,
    })
    expect(failed.code).toBe(3)
    // What git status would show: the project holds what it held.
    expect(readdirSync(dir)).toEqual(['base.txt'])
    expect((await stat(join(state, 'runs'))).mode & 0o777).toBe(0o700)
    const [session] = readdirSync(join(state, 'runs')).filter((f) => f.endsWith('.db'))
    expect(session).toMatch(/^run-\d{8}-\d{6}\.db$/)
    const id = session!.replace(/\.db$/, '')
    expect(failed.err).toContain(`kept in ${id}; review with "agentfs diff ${id}"`)
    expect(runCli(cli, ['diff', id], { cwd: dir, env }).out).toContain('A /out.txt')
    expect(existsSync(join(dir, 'out.txt'))).toBe(false)
    // Listed by name for this project (and with --all from anywhere).
    expect(runCli(cli, ['runs'], { cwd: dir, env }).out).toMatch(
      new RegExp(`^${id}  1 change\\(s\\)  \\d{4}-`),
    )
    expect(runCli(cli, ['runs'], { cwd, env }).out).toMatch(/^no run sessions for /)
    expect(runCli(cli, ['runs', '--all'], { cwd, env }).out).toContain(`${id}  1 change(s)`)
    // Continuing a session sees its earlier changes.
    const again = runCli(cli, ['run', '--db', id, '--', 'cat', 'out.txt'], { cwd: dir, env })
    expect(again).toMatchObject({ code: 0, out: 'partial\n' })
    const missing = runCli(cli, ['run', '--db', id, '--', 'no-such-command-here'], {
      cwd: dir,
      env,
    })
    expect(missing.code).not.toBe(0)
  }, 60_000)

  test('in the view, a file unlinked while open stays readable (and writable, if new) until closed', async () => {
    const dir = join(cwd, 'unlinked')
    await mkdir(dir)
    sh("printf 'from the host\\n' > host.txt", dir)
    const script = `
      exec 3<host.txt; rm host.txt
      echo "host: $(cat <&3) nlink $(stat -L -c %h /proc/self/fd/3)"
      echo new > made; exec 4<>made; rm made; echo rewritten >&4
      echo "made: $(cat /proc/self/fd/4) nlink $(stat -L -c %h /proc/self/fd/4)"
      exec 3<&- 4<&-; ls
    `
    const run = runCli(cli, ['run', '--db', '../unlinked.db', '--', 'sh', '-c', script], {
      cwd: dir,
    })
    expect(run.out).toBe('host: from the host nlink 0\nmade: rewritten nlink 0\n')
    expect(run.code).toBe(0)
    expect(sh('cat host.txt', dir)).toBe('from the host\n')
    const diff = runCli(cli, ['diff', '--json', '../unlinked.db'], { cwd: dir })
    const changes = JSON.parse(diff.out) as { kind: string; path: string }[]
    expect(changes.map((c) => `${c.kind} ${c.path}`)).toEqual(['deleted /host.txt'])
  })

  test.skipIf(!root)(
    'in the view, reads after a write see the copy, not the host file',
    async () => {
      const dir = join(cwd, 'copied')
      await mkdir(dir)
      sh("printf 'from the host\\n' > f.txt", dir)
      // Read first (through the host file), append (the view copies the file up), then read again
      // with the kernel's page cache dropped, so that the read reaches the mount.
      const script =
        'cat f.txt > /dev/null; echo appended >> f.txt; sync; echo 1 > /proc/sys/vm/drop_caches; cat f.txt'
      const run = runCli(cli, ['run', '--db', '../copied.db', '--', 'sh', '-c', script], {
        cwd: dir,
      })
      expect(run.out).toBe('from the host\nappended\n')
      expect(run.code).toBe(0)
      expect(sh('cat f.txt', dir)).toBe('from the host\n')
    },
  )

  test('a session database of another directory is refused with one clear line', async () => {
    const other = join(cwd, 'other')
    await mkdir(other)
    const result = runCli(cli, ['run', '--db', '../session.db', '--', 'true'], { cwd: other })
    expect(result.code).toBe(1)
    expect(result.err).toMatch(/^agentfs: .*session\.db is an overlay over .*project, not .*other/)
  })
})

const bwrap = spawnSync('bwrap', ['--unshare-all', '--ro-bind', '/', '/', '--', 'true'])
const sandboxUsable = bwrap.error === undefined && bwrap.status === 0
if (!sandboxUsable && process.env.CI === 'true' && root)
  throw new Error('agentfs run --sandbox tests need bubblewrap under CI=true as root')

describe.skipIf(!fuse || !sandboxUsable)('agentfs run --sandbox', () => {
  test('only the view and --writable paths change; the host is read-only, home hidden, network off', async () => {
    const project = join(cwd, 'boxed')
    const out = join(cwd, 'boxed-out')
    const home = join(cwd, 'boxed-home')
    for (const dir of [project, out, home]) await mkdir(dir)
    sh('echo base > base.txt', project)
    sh('echo secret > secret.txt && echo shown > shown.txt', home)
    const server = createServer((socket) => socket.end('hello from the host\n'))
    await new Promise<void>((ready) => server.listen(0, '127.0.0.1', ready))
    const port = (server.address() as AddressInfo).port
    // A host service's unix socket: reachable without any network, so it must not be there.
    const socketPath = `/run/agentfs-sandbox-test-${process.pid}.sock`
    const service = createServer((socket) => socket.end('host service\n'))
    await new Promise<void>((ready) => service.listen(socketPath, ready))
    try {
      const script = `
        echo changed > base.txt && echo new > new.txt
        echo out > "$OUT/written.txt"
        if echo x > /etc/agentfs-sandbox-test 2>/dev/null; then echo "host writable"; fi
        echo x > "$OUT/../escape.txt" 2>/dev/null || true
        if cat "$HOME/secret.txt" 2>/dev/null; then echo "home visible"; fi
        cat "$HOME/shown.txt"
        if (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null; then echo "net on"; else echo "net off"; fi
        if [ -e "$SOCKET" ]; then echo "host socket visible"; fi
        echo "sandbox=$AGENTFS_SANDBOX"
      `
      const env = {
        ...process.env,
        HOME: home,
        OUT: out,
        PORT: String(port),
        SOCKET: socketPath,
      }
      const run = runCli(
        cli,
        [
          'run',
          '--sandbox',
          '--writable',
          out,
          '--read',
          join(home, 'shown.txt'),
          '--db',
          '../boxed.db',
          '--',
          'bash',
          '-c',
          script,
        ],
        { cwd: project, env },
      )
      expect(run.err).toMatch(/2 change\(s\) kept in \.\.\/boxed\.db/)
      expect(run.out).toBe('shown\nnet off\nsandbox=1\n')
      expect(run.code).toBe(0)
      expect(sh('cat base.txt; ls', project)).toBe('base\nbase.txt\n')
      expect(sh('cat written.txt', out)).toBe('out\n')
      expect(existsSync(join(cwd, 'escape.txt'))).toBe(false)
      expect(existsSync('/etc/agentfs-sandbox-test')).toBe(false)

      const online = runCli(
        cli,
        ['run', '--sandbox', '--allow-net', '--db', '../boxed.db', '--', 'bash', '-c', script],
        { cwd: project, env },
      )
      expect(online.out).toMatch(/net on\n/)
      expect(online.out).not.toMatch(/home visible|host writable|host socket visible/)
    } finally {
      server.close()
      service.close()
    }
  }, 120_000)

  test('the session database is out of reach; commit plants no setuid file and lists what it leaves out', async () => {
    const project = join(cwd, 'boxed-setuid')
    await mkdir(project)
    sh('printf "#!/bin/sh\\necho tool\\n" > tool.sh && chmod 755 tool.sh', project)
    const script = `
      cp /bin/sh rootsh && chmod 4755 rootsh
      chmod 6777 tool.sh
      mkfifo pipe
      if ls .agentfs/*.db >/dev/null 2>&1; then echo "session db visible"; fi
      if ls "$RUNS"/*.db >/dev/null 2>&1; then echo "session db visible in $RUNS"; fi
      if head -c 15 "$DB" 2>/dev/null | grep -q SQLite; then echo "session db readable"; fi
      echo tampered > "$DB" 2>/dev/null || true
      rm -f "$DB-wal" 2>/dev/null || true
      true
    `
    // A state directory outside /tmp and home (which the sandbox hides anyway), so what hides
    // the run sessions is the sandbox's own rule for them.
    const state = await mkdtemp('/var/lib/agentfs-test-state-')
    const env = { ...process.env, AGENTFS_STATE_DIR: state }
    const runs = join(state, 'runs')
    try {
      const run = runCli(cli, ['run', '--sandbox', '--db', 'sess', '--', 'bash', '-c', script], {
        cwd: project,
        env: { ...env, DB: join(runs, 'sess.db'), RUNS: runs },
      })
      expect(run.code).toBe(0)
      expect(existsSync(join(runs, 'sess.db'))).toBe(true)
      expect(run.out).not.toMatch(/session db (visible|readable)/)
      // The review shows modes (and what commit will drop), as text and JSON.
      const diff = runCli(cli, ['diff', 'sess'], { cwd: project, env })
      expect(diff.out).toMatch(
        /^M \/tool\.sh\n {4}mode 755 -> 6777 \(setuid, setgid: dropped by commit/m,
      )
      expect(diff.out).toMatch(/^A \/rootsh\n {4}mode 4755 \(setuid: dropped by commit/m)
      expect(diff.out).toMatch(/^A \/pipe {2}\(a FIFO, socket or device: commit skips it\)/m)
      expect(diff.out).not.toMatch(/\.agentfs/)
      const json = JSON.parse(runCli(cli, ['diff', '--json', 'sess'], { cwd: project, env }).out)
      expect(json.find((c: { path: string }) => c.path === '/tool.sh').mode).toEqual({
        before: 0o755,
        after: 0o6777,
      })
      const commit = runCli(cli, ['commit', 'sess'], { cwd: project, env })
      expect(commit.code).toBe(0)
      expect(commit.out).toMatch(/dropped setuid from \/rootsh \(pass --keep-setuid/)
      expect(commit.out).toMatch(/dropped setuid, setgid from \/tool\.sh/)
      expect(commit.out).toMatch(/skipped \/pipe: a FIFO/)
      expect(sh('stat -c %a rootsh tool.sh', project)).toBe('755\n777\n')
      expect(existsSync(join(project, 'pipe'))).toBe(false)
    } finally {
      await rm(state, { recursive: true, force: true })
    }
  }, 120_000)

  test('signals reach the sandboxed command; its status is the run status', async () => {
    const project = join(cwd, 'boxed-signal')
    await mkdir(project)
    const child = spawn(
      process.execPath,
      [
        cli,
        'run',
        '--sandbox',
        '--db',
        '../boxed-signal.db',
        '--',
        'sh',
        '-c',
        'trap "exit 7" TERM; echo ready; sleep 30 & wait',
      ],
      { cwd: project, stdio: ['ignore', 'pipe', 'pipe'] },
    )
    await new Promise<void>((ready) => child.stdout.on('data', () => ready()))
    child.kill('SIGTERM')
    const code = await new Promise<number | null>((done) => child.on('exit', done))
    expect(code).toBe(7)
  }, 60_000)

  test('sandbox flags are refused before anything is made: without --sandbox, a missing path, no bubblewrap', async () => {
    const project = join(cwd, 'boxed-refused')
    await mkdir(project)
    const stray = runCli(cli, ['run', '--allow-net', '--', 'true'], { cwd: project })
    expect(stray).toMatchObject({ code: 1 })
    expect(stray.err).toMatch(/^agentfs: --allow-net only apply with --sandbox\n$/)
    const missing = runCli(cli, ['run', '--sandbox', '--writable', 'nowhere', '--', 'true'], {
      cwd: project,
    })
    expect(missing.err).toMatch(/--writable nowhere: no such file or directory on the host/)
    const emptyPath = join(cwd, 'no-bin')
    await mkdir(emptyPath)
    const noBwrap = runCli(cli, ['run', '--sandbox', '--', 'true'], {
      cwd: project,
      env: { ...process.env, PATH: emptyPath },
    })
    expect(noBwrap.err).toMatch(
      /needs bubblewrap, which is not installed \(apt-get install bubblewrap\)/,
    )
    expect(existsSync(join(project, '.agentfs'))).toBe(false)
  })
})
