import { fixedClock, unifiedDiff } from '@agentfs/core'
import type { FileSystem } from '@agentfs/fs'
import { AgentFS } from '@agentfs/sdk'
import { afterEach, describe, expect, test } from 'vitest'
import { type AgentToolsOptions, createAgentTools } from '../src/index.js'

const agents: AgentFS[] = []
afterEach(async () => {
  for (const a of agents.splice(0)) await a.close()
})

async function setup(options: Partial<AgentToolsOptions> = {}) {
  const agent = await AgentFS.open({ path: ':memory:', clock: fixedClock() })
  agents.push(agent)
  const tools = createAgentTools({ fs: agent.fs, audit: agent.tools, ...options })
  const run = (name: string, input: unknown) => tools.get(name)!.execute(input)
  const read = async (path: string) => (await agent.fs.readFile(path)).toString('utf8')
  const exists = (path: string) => agent.fs.exists(path)
  return { agent: withParents(agent), run, read, exists }
}

/** `agent` whose fs.writeFile makes missing parent directories (fixtures only). */
function withParents(agent: AgentFS) {
  const write = agent.fs.writeFile.bind(agent.fs)
  const fs = Object.create(agent.fs) as FileSystem
  fs.writeFile = async (path, data, options) => {
    await agent.fs.mkdir(path.slice(0, path.lastIndexOf('/')) || '/', { recursive: true })
    return write(path, data, options)
  }
  return { fs, tools: agent.tools }
}

const APP = 'import x from "x"\n\nfunction main() {\n  const a = 1\n  return a\n}\n\nmain()\n'

describe('apply_patch, *** Begin Patch', () => {
  test('update with an @@ anchor, add, delete and move in one patch', async () => {
    const { agent, run, read, exists } = await setup()
    await agent.fs.writeFile('/src/app.ts', APP)
    await agent.fs.writeFile('/src/old.ts', 'gone\n')
    await agent.fs.writeFile('/src/name.ts', 'export const n = 1\n')
    const out = await run('apply_patch', {
      patch: [
        '*** Begin Patch',
        '*** Update File: /src/app.ts',
        '@@ function main() {',
        '-  const a = 1',
        '+  const a = 2',
        '   return a',
        '*** Add File: /src/new/util.ts',
        '+export const u = true',
        '*** Delete File: /src/old.ts',
        '*** Update File: /src/name.ts',
        '*** Move to: /lib/name.ts',
        '@@',
        '-export const n = 1',
        '+export const n = 2',
        '*** End Patch',
      ].join('\n'),
    })
    expect(out.isError, out.text).toBeFalsy()
    expect(await read('/src/app.ts')).toBe(APP.replace('const a = 1', 'const a = 2'))
    expect(await read('/src/new/util.ts')).toBe('export const u = true\n')
    expect(await exists('/src/old.ts')).toBe(false)
    expect(await exists('/src/name.ts')).toBe(false)
    expect(await read('/lib/name.ts')).toBe('export const n = 2\n')
    expect(out.text).toContain('M /src/app.ts (1 hunk(s))')
    expect(out.text).toContain('R /src/name.ts → /lib/name.ts')
    expect(Object.keys(out.data?.versions as object).sort()).toEqual([
      '/lib/name.ts',
      '/src/app.ts',
      '/src/new/util.ts',
    ])
  })

  test('all or nothing: a hunk that does not apply leaves every file as it was, and shows the closest text', async () => {
    const { agent, run, read, exists } = await setup()
    await agent.fs.writeFile('/a.txt', 'one\ntwo\n')
    await agent.fs.writeFile('/b.ts', APP)
    const out = await run('apply_patch', {
      patch: [
        '*** Begin Patch',
        '*** Update File: /a.txt',
        '-one',
        '+ONE',
        '*** Add File: /c.txt',
        '+c',
        '*** Update File: /b.ts',
        ' function main() {',
        '-  const a = 10',
        '+  const a = 2',
        '*** End Patch',
      ].join('\n'),
    })
    expect(out).toMatchObject({ isError: true, code: 'PATCH_FAILED' })
    expect(out.text).toContain('hunk 1 of 1 for /b.ts')
    expect(out.text).toContain('The closest text is at lines 3-4 of /b.ts')
    expect(out.text).toContain('-  const a = 1')
    expect(out.text).toContain('+  const a = 10')
    expect(await read('/a.txt')).toBe('one\ntwo\n')
    expect(await exists('/c.txt')).toBe(false)
  })

  test('a CRLF, tab-indented file patched with LF and spaces keeps its style', async () => {
    const { agent, run, read } = await setup()
    await agent.fs.writeFile('/m.go', 'func f() {\r\n\tx := 1\r\n\treturn x\r\n}\r\n')
    const out = await run('apply_patch', {
      patch:
        '*** Begin Patch\n*** Update File: /m.go\n     x := 1\n+    y := 2\n-    return x\n+    return x + y\n*** End Patch',
    })
    expect(out.isError, out.text).toBeFalsy()
    expect(await read('/m.go')).toBe(
      'func f() {\r\n\tx := 1\r\n\ty := 2\r\n\treturn x + y\r\n}\r\n',
    )
    expect(out.data?.tolerances).toEqual(['/m.go: trailing-whitespace', '/m.go: indentation'])
  })

  test('context found only tolerantly in two places is refused', async () => {
    const { agent, run, read } = await setup()
    const before = 'a \nb\na\t\nb\n'
    await agent.fs.writeFile('/t.txt', before)
    const out = await run('apply_patch', {
      patch: '*** Begin Patch\n*** Update File: /t.txt\n a\n-b\n+c\n*** End Patch',
    })
    expect(out).toMatchObject({ isError: true, code: 'PATCH_FAILED' })
    expect(out.text).toContain('match 2 places (lines 1, 3)')
    expect(await read('/t.txt')).toBe(before)
  })

  test('*** End of File anchors a hunk at the end; a missing End Patch or a bad line is refused', async () => {
    const { agent, run, read } = await setup()
    await agent.fs.writeFile('/e.txt', 'x\ny\nx\ny\n')
    await run('apply_patch', {
      patch: '*** Begin Patch\n*** Update File: /e.txt\n x\n-y\n+z\n*** End of File\n*** End Patch',
    })
    expect(await read('/e.txt')).toBe('x\ny\nx\nz\n')
    const unterminated = await run('apply_patch', {
      patch: '*** Begin Patch\n*** Add File: /f\n+x\n',
    })
    expect(unterminated).toMatchObject({ isError: true, code: 'EINVAL' })
    expect(unterminated.text).toContain('does not end with *** End Patch')
    const bad = await run('apply_patch', {
      patch: '*** Begin Patch\n*** Update File: /e.txt\n x\n?y\n*** End Patch',
    })
    expect(bad.text).toContain('starts with neither space, -, + nor @@')
  })

  test('add over an existing file, delete or update of a missing one are refused', async () => {
    const { agent, run } = await setup()
    await agent.fs.writeFile('/here.txt', 'x\n')
    expect(
      await run('apply_patch', {
        patch: '*** Begin Patch\n*** Add File: /here.txt\n+y\n*** End Patch',
      }),
    ).toMatchObject({ isError: true, code: 'EEXIST' })
    expect(
      await run('apply_patch', { patch: '*** Begin Patch\n*** Delete File: /nope\n*** End Patch' }),
    ).toMatchObject({ isError: true, code: 'ENOENT' })
    expect(
      await run('apply_patch', {
        patch: '*** Begin Patch\n*** Update File: /nope\n-a\n+b\n*** End Patch',
      }),
    ).toMatchObject({ isError: true, code: 'ENOENT' })
  })
})

describe('apply_patch, unified diff', () => {
  test('a multi-file git diff with shifted line numbers, an added and a deleted file', async () => {
    const { agent, run, read, exists } = await setup()
    const after = APP.replace('return a', 'return a * 2')
    await agent.fs.writeFile('/src/app.ts', `// a header line\n// another\n${APP}`)
    await agent.fs.writeFile('/src/dead.ts', 'dead\n')
    // Made against the file without its two header lines: every hunk is two lines off.
    const diff = unifiedDiff('a/src/app.ts', 'b/src/app.ts', APP, after, { context: 2 }).text
    const patch = [
      `diff --git a/src/app.ts b/src/app.ts\n${diff}`,
      'diff --git a/src/new.ts b/src/new.ts\nnew file mode 100644\n--- /dev/null\n+++ b/src/new.ts\n@@ -0,0 +1,2 @@\n+one\n+two',
      'diff --git a/src/dead.ts b/src/dead.ts\ndeleted file mode 100644\n--- a/src/dead.ts\n+++ /dev/null\n@@ -1 +0,0 @@\n-dead',
    ].join('\n')
    const out = await run('apply_patch', { patch })
    expect(out.isError, out.text).toBeFalsy()
    expect(await read('/src/app.ts')).toBe(`// a header line\n// another\n${after}`)
    expect(await read('/src/new.ts')).toBe('one\ntwo\n')
    expect(await exists('/src/dead.ts')).toBe(false)
  })

  test('"\\ No newline at end of file" is honoured on the new side', async () => {
    const { agent, run, read } = await setup()
    await agent.fs.writeFile('/n.txt', 'a\nb\n')
    const out = await run('apply_patch', {
      patch:
        '--- a/n.txt\n+++ b/n.txt\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n\\ No newline at end of file\n',
    })
    expect(out.isError, out.text).toBeFalsy()
    expect(await read('/n.txt')).toBe('a\nc')
  })

  test('of two exact places, the one nearest the hunk header is changed', async () => {
    const { agent, run, read } = await setup()
    await agent.fs.writeFile('/r.txt', 'k\nv\nk\nv\nk\nv\n')
    await run('apply_patch', { patch: '--- a/r.txt\n+++ b/r.txt\n@@ -3,2 +3,2 @@\n k\n-v\n+V\n' })
    expect(await read('/r.txt')).toBe('k\nv\nk\nV\nk\nv\n')
  })

  test('text that is neither format is refused with what was expected', async () => {
    const { run } = await setup()
    const out = await run('apply_patch', { patch: 'please change the file' })
    expect(out).toMatchObject({ isError: true, code: 'EINVAL' })
    expect(out.text).toContain('*** Begin Patch')
  })
})

describe('apply_patch safety', () => {
  test('a path outside the allowed roots anywhere in the patch refuses it before any change', async () => {
    const { agent, run, read } = await setup({ allowedRoots: ['/work'] })
    await agent.fs.writeFile('/work/a.txt', 'a\n')
    await agent.fs.writeFile('/etc/passwd', 'root\n')
    const out = await run('apply_patch', {
      patch:
        '*** Begin Patch\n*** Update File: /work/a.txt\n-a\n+b\n*** Update File: /etc/passwd\n-root\n+evil\n*** End Patch',
    })
    expect(out).toMatchObject({ isError: true, code: 'EACCES' })
    expect(await read('/work/a.txt')).toBe('a\n')
    expect(await read('/etc/passwd')).toBe('root\n')
  })

  test('a file changed between the check and the commit refuses the whole patch', async () => {
    const agent = await AgentFS.open({ path: ':memory:', clock: fixedClock() })
    agents.push(agent)
    await agent.fs.writeFile('/a.txt', 'a\n')
    await agent.fs.writeFile('/b.txt', 'b\n')
    // Another writer gets in just before the patch's transaction starts.
    const racing = new Proxy(agent.fs, {
      get(target, key, receiver) {
        if (key === 'transaction')
          return async (fn: (fs: FileSystem) => Promise<unknown>) => {
            await target.writeFile('/b.txt', 'changed\n')
            return target.transaction(fn as never)
          }
        const value = Reflect.get(target, key, receiver)
        return typeof value === 'function' ? value.bind(target) : value
      },
    })
    const tools = createAgentTools({ fs: racing })
    const out = await tools.get('apply_patch')!.execute({
      patch:
        '*** Begin Patch\n*** Update File: /a.txt\n-a\n+A\n*** Update File: /b.txt\n-b\n+B\n*** End Patch',
    })
    expect(out).toMatchObject({ isError: true, code: 'STALE' })
    expect(await agent.fs.readFile('/a.txt', 'utf8')).toBe('a\n')
    expect(await agent.fs.readFile('/b.txt', 'utf8')).toBe('changed\n')
  })

  test('the call and its whole patch are in the audit log', async () => {
    const { agent, run } = await setup()
    const patch = '*** Begin Patch\n*** Add File: /x.txt\n+x\n*** End Patch'
    await run('apply_patch', { patch })
    const [call] = await agent.tools.byName('apply_patch')
    expect(call?.parameters).toEqual({ patch })
  })
})
