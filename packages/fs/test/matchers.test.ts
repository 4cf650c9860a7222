import picomatch from 'picomatch'
import { describe, expect, test } from 'vitest'
import { compileGlob, compileRegex } from '../src/search/matchers.js'

const PATTERNS = [
  '*',
  '**',
  '**/*',
  '*.ts',
  '**/*.ts',
  'src/**',
  'src/**/*.ts',
  '/workspace/**',
  '/workspace/*',
  '/',
  '/docs/**',
  'a?c',
  '[ab]*',
  '[a-c]*',
  '[a-c]x',
  '{src,test}/**/*.{ts,js}',
  'src/{a,b{c,d}}.ts',
  '**/.git/**',
  '.*',
  'a/**/b',
  '*/*',
  'x\\*y',
]
const PATHS = [
  '',
  'a',
  'abc',
  'axc',
  'bx',
  'dx',
  'a.ts',
  '.hidden',
  '.git/config',
  'src',
  'src/a.ts',
  'src/bd.ts',
  'src/deep/er/b.ts',
  'src/.hidden/c.ts',
  'test/x.js',
  'workspace',
  'workspace/file',
  'workspace/a/b',
  'docs',
  'docs/guide.md',
  'a/b',
  'a/x/y/b',
  'x*y',
  'xzy',
  'repo/.git/HEAD',
]

describe('compileGlob', () => {
  for (const dot of [false, true])
    test(`agrees with picomatch on ordinary patterns (dot: ${dot})`, () => {
      for (const pattern of PATTERNS) {
        const ours = compileGlob(pattern, { dot })
        const theirs =
          pattern === '/'
            ? () => false
            : picomatch(pattern.startsWith('/') ? pattern.slice(1) : pattern, { dot })
        for (const path of PATHS) {
          // The empty path is the root; only `/` is about it.
          if (path === '' && pattern !== '/') continue
          expect(ours(path), `${pattern} on '${path}' (dot ${dot})`).toBe(
            pattern === '/' ? path === '' : theirs(path),
          )
        }
      }
    })

  test('matchBase matches the last component of a pattern without a slash', () => {
    const m = compileGlob('*.md', { matchBase: true, dot: true })
    expect(m('docs/deep/guide.md')).toBe(true)
    expect(m('docs/guide.txt')).toBe(false)
  })

  test('[!x] is a negated class, as in the shell', () => {
    expect(compileGlob('[!a]*')('a')).toBe(false)
    expect(compileGlob('[!a]*')('ba')).toBe(true)
  })

  test('a leading ! negates', () => {
    const m = compileGlob('!*.md')
    expect(m('a.md')).toBe(false)
    expect(m('a.ts')).toBe(true)
  })

  test('stars that make a backtracking matcher exponential match in linear time', () => {
    // picomatch needs seconds (and more per star) on these; the DP matcher a few milliseconds.
    const pattern = `${'*a'.repeat(12)}*b`
    const name = 'a'.repeat(200)
    const start = performance.now()
    expect(compileGlob(pattern)(name)).toBe(false)
    expect(compileGlob(`**/${pattern}`)(`x/y/${name}`)).toBe(false)
    expect(performance.now() - start).toBeLessThan(1000)
  })

  test('brace bombs are refused with EINVAL, not expanded', () => {
    expect(() => compileGlob('{a,b}'.repeat(20))).toThrow(/EINVAL/)
  })
})

describe('compileRegex', () => {
  test('RE2 syntax, case folding, literals', () => {
    expect(compileRegex('fo+').test('xfooy')).toBe(true)
    expect(compileRegex('FOO', { ignoreCase: true }).test('xfooy')).toBe(true)
    expect(compileRegex('a.b', { fixedStrings: true }).test('axb')).toBe(false)
    expect(compileRegex('a.b', { fixedStrings: true }).test('a.b')).toBe(true)
    expect(compileRegex(/ab/i).test('AB')).toBe(true)
  })

  test('catastrophic patterns run in linear time', () => {
    const start = performance.now()
    expect(compileRegex('(a+)+$').test(`${'a'.repeat(5000)}b`)).toBe(false)
    expect(compileRegex('(x+x+)+y').test('x'.repeat(5000))).toBe(false)
    expect(performance.now() - start).toBeLessThan(2000)
  })

  test('unsupported or invalid syntax is EINVAL naming the reason', () => {
    expect(() => compileRegex('(?=a)')).toThrow(/EINVAL.*RE2/)
    expect(() => compileRegex('(a')).toThrow(/EINVAL/)
    expect(() => compileRegex('(a)\\1')).toThrow(/EINVAL/)
  })
})
