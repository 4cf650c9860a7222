import { describe, expect, test } from 'vitest'
import { openTools } from './open-tools.js'

const setup = (limits = {}) => openTools({ limits })

const tokenOf = (text: string) => /continuation "([^"]+)"/.exec(text)?.[1]

describe('read_file ranges and continuation', () => {
  test('several ranges in one call, each with its header', async () => {
    const { agent, run } = await setup()
    await agent.fs.writeFile(
      '/a.txt',
      Array.from({ length: 100 }, (_, i) => `L${i + 1}`).join('\n'),
    )
    const out = await run('read_file', {
      path: '/a.txt',
      ranges: [{ offset: 2, limit: 2 }, { offset: 50, limit: 1 }, { offset: 500 }],
    })
    expect(out.isError, out.text).toBeFalsy()
    expect(out.text).toContain('[range 1: lines 2–3]\n     2\tL2\n     3\tL3')
    expect(out.text).toContain('[range 2: lines 50–50]\n    50\tL50')
    expect(out.text).toContain('[lines from 500: past the end (100 lines)]')
    const both = await run('read_file', { path: '/a.txt', offset: 1, ranges: [{ offset: 1 }] })
    expect(both).toMatchObject({ isError: true })
    expect(
      await run('read_file', {
        path: '/a.txt',
        ranges: Array.from({ length: 21 }, () => ({ offset: 1 })),
      }),
    ).toMatchObject({ isError: true })
  })

  test('a huge single-line file is paged through by continuation tokens, every character once', async () => {
    const { agent, run } = await setup({ maxChars: 5_000, maxLineLength: 1_000 })
    const line = Array.from({ length: 3_000 }, (_, i) => `${i},`).join('')
    await agent.fs.writeFile('/min.json', `${line}\nsecond line\n`)
    const first = await run('read_file', { path: '/min.json' })
    expect(first.text).toContain(`[line truncated: ${line.length} characters]`)
    let token = tokenOf(first.text)
    let seen = line.slice(0, 1_000)
    let calls = 0
    while (token !== undefined && calls++ < 100) {
      const page = await run('read_file', { path: '/min.json', continuation: token })
      expect(page.isError, page.text).toBeFalsy()
      const body = page.text.split('\n')[1]!
      seen += body
      token = page.text.includes('reads on in this line') ? tokenOf(page.text) : undefined
      if (token === undefined) expect(page.text).toContain('continue with offset 2')
    }
    expect(seen).toBe(line)
    expect(calls).toBeGreaterThan(2)
  })

  test('byte reads move to character boundaries and continue by token to the end', async () => {
    const { agent, run } = await setup({ maxChars: 2_000 })
    const text = 'é€😀'.repeat(2_000)
    await agent.fs.writeFile('/u.txt', text)
    let out = await run('read_file', { path: '/u.txt', byte_offset: 1, byte_limit: 100 })
    // Byte 1 is inside "é": the read starts at its first byte.
    expect(out.text).toMatch(/^\[bytes 0–\d+ of 18,000\]\né€😀/)
    let seen = ''
    out = await run('read_file', { path: '/u.txt', byte_offset: 0 })
    for (let calls = 0; calls < 100; calls++) {
      seen += out.text.split('\n')[1]
      const token = tokenOf(out.text)
      if (token === undefined) break
      out = await run('read_file', { path: '/u.txt', continuation: token })
    }
    expect(seen).toBe(text)
    expect(seen).not.toContain('\ufffd')
  })

  test('the answer is capped in characters with a token to continue at the next line', async () => {
    const { agent, run } = await setup({ maxChars: 1_000 })
    await agent.fs.writeFile('/w.txt', Array.from({ length: 500 }, () => 'x'.repeat(40)).join('\n'))
    const out = await run('read_file', { path: '/w.txt' })
    expect(out.text.length).toBeLessThan(1_400)
    expect(out.text).toMatch(
      /output capped at 1,000 characters; \d+ more lines — continue with offset (\d+)/,
    )
    const next = Number(/continue with offset (\d+)/.exec(out.text)![1])
    const again = await run('read_file', { path: '/w.txt', continuation: tokenOf(out.text) })
    expect(again.text.split('\n')[0]).toBe(`${String(next).padStart(6)}\t${'x'.repeat(40)}`)
  })

  test('a token from another file, a forged one, and a token after the file changed', async () => {
    const { agent, run } = await setup({ maxChars: 1_000, maxLineLength: 100 })
    await agent.fs.writeFile('/a.txt', 'y'.repeat(5_000))
    await agent.fs.writeFile('/b.txt', 'z'.repeat(5_000))
    const token = tokenOf((await run('read_file', { path: '/a.txt' })).text)!
    const other = await run('read_file', { path: '/b.txt', continuation: token })
    expect(other).toMatchObject({ isError: true, code: 'EINVAL' })
    expect(other.text).toContain('was made for another file than /b.txt')
    for (const forged of [
      'nope',
      `rf1.${Buffer.from('{"m":"l","l":-1}').toString('base64url')}`,
      `rf1.${'A'.repeat(600)}`,
    ])
      expect(await run('read_file', { path: '/a.txt', continuation: forged })).toMatchObject({
        isError: true,
        code: 'EINVAL',
      })
    await agent.fs.writeFile('/a.txt', 'w'.repeat(5_000))
    const after = await run('read_file', { path: '/a.txt', continuation: token })
    expect(after.text).toContain('changed since that token was made')
    expect(after.text).toContain('www')
  })
})
