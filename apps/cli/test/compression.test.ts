import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, test } from 'vitest'
import { runCli, useCliSandbox } from './helpers.js'

let cli: string
let cwd: string
useCliSandbox('agentfs-compress-', (sandbox) => {
  ;({ cli, cwd } = sandbox)
})

const run = (args: string[], input?: string) =>
  runCli(cli, args, { cwd, ...(input === undefined ? {} : { input }) })
const ok = (args: string[], input?: string) => {
  const r = run(args, input)
  if (r.code !== 0) throw new Error(`agentfs ${args.join(' ')} failed (${r.code}): ${r.err}`)
  return r
}
const TEXT = Array.from({ length: 2000 }, (_, i) => `${i}: the agent noted the build step\n`).join(
  '',
)

describe('agentfs init --compress', () => {
  test('makes a database whose file content is stored compressed, and says so', () => {
    expect(ok(['init', '--compress', 'notes']).out).toContain('compressed with zstd')
    ok(['fs', 'write', 'notes', '/build.log'], TEXT)
    expect(ok(['fs', 'cat', 'notes', '/build.log']).out).toBe(TEXT)
    const info = JSON.parse(ok(['info', 'notes', '--json']).out)
    expect(info.compression).toBe('zstd')
    expect(info.fileBytes).toBe(TEXT.length)
    expect(info.storedBytes).toBeLessThan(TEXT.length / 5)
    expect(ok(['fsck', 'notes']).code).toBe(0)
    expect(ok(['search', 'notes', 'build step']).out).toContain('/build.log')
    // Plain databases say so too.
    ok(['init', 'plain'])
    expect(JSON.parse(ok(['info', 'plain', '--json']).out).compression).toBeNull()
  })

  test('is refused beside --sync-url, before anything is made', () => {
    const r = run(['init', '--compress', '--sync-url', 'http://127.0.0.1:9', 'synced'])
    expect(r.code).toBe(1)
    expect(r.err).toMatch(/--compress and --sync-url cannot be combined/)
    expect(existsSync(join(cwd, '.agentfs', 'synced.db'))).toBe(false)
  })
})
