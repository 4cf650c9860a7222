import { describe, expect, test } from 'vitest'
import { nearMisses } from '../src/edit/near-miss.js'
import { findMatches } from '../src/edit/tolerant-edit.js'
import { openTools } from './open-tools.js'

const setup = () => openTools()

describe('edit_file tolerance ladder', () => {
  test('a CRLF file edited with LF text stays CRLF, and the answer names the tolerance', async () => {
    const { agent, run, read } = await setup()
    await agent.fs.writeFile('/w.txt', 'one\r\ntwo\r\nthree\r\n')
    const out = await run('edit_file', {
      path: '/w.txt',
      old_string: 'one\ntwo\n',
      new_string: 'one\ntwo and a half\nmore\n',
    })
    expect(out.isError).toBeFalsy()
    expect(await read('/w.txt')).toBe('one\r\ntwo and a half\r\nmore\r\nthree\r\n')
    expect(out.text).toContain('line endings tolerated')
    expect(out.data?.tolerances).toEqual(['line endings'])
  })

  test('an exact edit of a CRLF file writes the new lines as CRLF too', async () => {
    const { agent, run, read } = await setup()
    await agent.fs.writeFile('/w.txt', 'a = 1\r\nb = 2\r\n')
    await run('edit_file', { path: '/w.txt', old_string: 'a = 1', new_string: 'a = 1\nc = 3' })
    expect(await read('/w.txt')).toBe('a = 1\r\nc = 3\r\nb = 2\r\n')
  })

  test('trailing whitespace the model left out still matches, and is kept where text is kept', async () => {
    const { agent, run, read } = await setup()
    await agent.fs.writeFile('/t.py', 'def f():  \n    return 1   \n')
    const out = await run('edit_file', {
      path: '/t.py',
      old_string: 'def f():\n    return 1',
      new_string: 'def f():\n    return 2',
    })
    expect(out.data?.tolerances).toEqual(['trailing whitespace'])
    expect(await read('/t.py')).toBe('def f():  \n    return 2   \n')
  })

  test('spaces typed for a tab-indented file match, and the new lines are written with tabs', async () => {
    const { agent, run, read } = await setup()
    await agent.fs.writeFile('/m.go', 'func f() {\n\tif x {\n\t\treturn 1\n\t}\n}\n')
    const out = await run('edit_file', {
      path: '/m.go',
      old_string: '    if x {\n        return 1\n    }',
      new_string: '    if x {\n        y := 2\n        return y\n    }',
    })
    expect(out.isError).toBeFalsy()
    expect(out.data?.tolerances).toEqual(['tabs vs spaces in indentation'])
    expect(await read('/m.go')).toBe('func f() {\n\tif x {\n\t\ty := 2\n\t\treturn y\n\t}\n}\n')
  })

  test('tabs typed for a space-indented file are written as its spaces', async () => {
    const { agent, run, read } = await setup()
    await agent.fs.writeFile('/s.ts', 'if (a) {\n  b()\n}\n')
    await run('edit_file', {
      path: '/s.ts',
      old_string: 'if (a) {\n\tb()\n}',
      new_string: 'if (a) {\n\tb()\n\tc()\n}',
    })
    expect(await read('/s.ts')).toBe('if (a) {\n  b()\n  c()\n}\n')
  })

  test('curly quotes, dashes and NBSP typed as ASCII match; the file keeps its own characters', async () => {
    const { agent, run, read } = await setup()
    await agent.fs.writeFile('/d.md', 'He said “stop” — twice.\nA\u00a0B costs 5.\n')
    const out = await run('edit_file', {
      path: '/d.md',
      old_string: 'He said "stop" - twice.',
      new_string: 'He said "stop" - three times.',
    })
    expect(out.data?.tolerances).toEqual([
      'look-alike characters (curly quotes, dashes, non-breaking spaces)',
    ])
    expect(await read('/d.md')).toBe('He said “stop” — three times.\nA\u00a0B costs 5.\n')
  })

  test('line numbers copied from read_file are stripped when every line has one', async () => {
    const { agent, run, read } = await setup()
    await agent.fs.writeFile('/n.txt', 'alpha\nbeta\ngamma\n')
    const out = await run('edit_file', {
      path: '/n.txt',
      old_string: '     2\tbeta\n     3\tgamma',
      new_string: '     2\tBETA\n     3\tgamma',
    })
    expect(out.isError).toBeFalsy()
    expect(out.text).toContain('read_file line-number prefixes')
    expect(await read('/n.txt')).toBe('alpha\nBETA\ngamma\n')
  })

  test('an exact match is preferred: a tolerant look-alike elsewhere does not make it ambiguous', async () => {
    const { agent, run, read } = await setup()
    await agent.fs.writeFile('/e.txt', 'x = 1  \nx = 1\n')
    await run('edit_file', { path: '/e.txt', old_string: 'x = 1\n', new_string: 'x = 2\n' })
    // The exact "x = 1\n" is the second line; the first (trailing spaces) is untouched.
    expect(await read('/e.txt')).toBe('x = 1  \nx = 2\n')
  })

  test('two tolerant matches are ambiguous and nothing is written', async () => {
    const { agent, run, read } = await setup()
    const before = 'a = 1 \nb\na = 1\t\nb\n'
    await agent.fs.writeFile('/amb.txt', before)
    const out = await run('edit_file', {
      path: '/amb.txt',
      old_string: 'a = 1\nb',
      new_string: 'c',
    })
    expect(out).toMatchObject({ isError: true, code: 'AMBIGUOUS' })
    expect(out.text).toContain('trailing whitespace tolerated')
    expect(out.text).toContain('Matches at lines: 1, 3')
    expect(await read('/amb.txt')).toBe(before)
    const all = await run('edit_file', {
      path: '/amb.txt',
      old_string: 'a = 1\nb',
      new_string: 'c',
      replace_all: true,
    })
    expect(all.isError).toBeFalsy()
    expect(await read('/amb.txt')).toBe('c\nc\n')
  })

  test('a real content difference never matches: the error shows the closest lines and what differs', async () => {
    const { agent, run, read } = await setup()
    const lines = Array.from({ length: 40 }, (_, i) => `const v${i} = ${i}`)
    lines[20] = 'function total(items) {'
    lines[21] = '  return items.reduce((a, b) => a + b, 0)'
    lines[22] = '}'
    const before = `${lines.join('\n')}\n`
    await agent.fs.writeFile('/c.js', before)
    const out = await run('edit_file', {
      path: '/c.js',
      old_string: 'function total(items) {\n  return items.reduce((a, b) => a + b, 1)\n}',
      new_string: 'function total(items) {\n  return 0\n}',
    })
    expect(out).toMatchObject({ isError: true, code: 'NOT_FOUND' })
    expect(out.text).toContain('The closest text is at lines 21-23 of /c.js (2 of 3 lines alike)')
    expect(out.text).toContain('    22\t  return items.reduce((a, b) => a + b, 0)')
    expect(out.text).toContain('-  return items.reduce((a, b) => a + b, 0)')
    expect(out.text).toContain('+  return items.reduce((a, b) => a + b, 1)')
    expect(await read('/c.js')).toBe(before)
  })

  test('a one-line near miss is found by similarity when no line is equal', () => {
    const text = 'alpha\nconst answer = computeTheAnswer(42)\nomega\n'
    expect(nearMisses(text, 'const answer = computeTheAnswer(43)')).toEqual([
      { from: 2, to: 2, alike: 0 },
    ])
    expect(nearMisses(text, 'something else entirely')).toEqual([])
  })

  test('diagnostics stay within their budget for a huge file and a long old_string', async () => {
    const { agent, run } = await setup()
    await agent.fs.writeFile('/big.txt', `${'y'.repeat(50_000)}\n`.repeat(20))
    const out = await run('edit_file', {
      path: '/big.txt',
      old_string: `${'y'.repeat(49_999)}z\n`.repeat(3),
      new_string: 'q',
    })
    expect(out.code).toBe('NOT_FOUND')
    expect(out.text.length).toBeLessThan(5_000)
  })

  test('multi_edit uses the ladder per edit and reports it', async () => {
    const { agent, run, read } = await setup()
    await agent.fs.writeFile('/a.txt', 'x\r\ny\r\n')
    await agent.fs.writeFile('/b.txt', '\tk = 1\n')
    const out = await run('multi_edit', {
      edits: [
        { path: '/a.txt', old_string: 'x\ny', new_string: 'x\nY' },
        { path: '/b.txt', old_string: '    k = 1', new_string: '    k = 2' },
      ],
    })
    expect(out.isError).toBeFalsy()
    expect(await read('/a.txt')).toBe('x\r\nY\r\n')
    expect(await read('/b.txt')).toBe('\tk = 2\n')
    expect(out.data?.tolerances).toEqual([
      '/a.txt: line endings',
      '/b.txt: tabs vs spaces in indentation',
    ])
  })

  test('findMatches names only the tolerances a match needs', () => {
    const found = findMatches('a\u2013b\n', 'a-b', 'c')
    expect(found.tolerances).toEqual(['unicode'])
    expect(findMatches('ab', 'ab', 'c').tolerances).toEqual([])
  })
})

describe('edit_file tolerance, found by the edit corpus', () => {
  test('a match never starts inside a tab: two spaces typed for one tab of a deeper line', async () => {
    const { agent, run, read } = await setup()
    await agent.fs.writeFile('/x.ts', 'export {\n\ta,\n\tb,\n} from "./m"\n')
    const out = await run('edit_file', {
      path: '/x.ts',
      old_string: '  b,\n} from "./m"',
      new_string: '  b,\n  c,\n} from "./m"',
    })
    expect(out.isError, out.text).toBeFalsy()
    expect(await read('/x.ts')).toBe('export {\n\ta,\n\tb,\n\tc,\n} from "./m"\n')
  })

  test('an added line is never stitched from the indentation of the lines around it', async () => {
    const { agent, run, read } = await setup()
    await agent.fs.writeFile('/y.ts', 'function f() {\n\tif (a)\n\t\tthrow e\n}\n')
    await run('edit_file', {
      path: '/y.ts',
      old_string: '  if (a)\n    throw e',
      new_string: '  if (a)\n  void 0 // note\n    throw e',
    })
    expect(await read('/y.ts')).toBe('function f() {\n\tif (a)\n\tvoid 0 // note\n\t\tthrow e\n}\n')
  })
})
