import { describe, expect, test } from 'vitest'
import {
  baseName,
  FsError,
  isWithin,
  joinPath,
  normalizePath,
  parentPath,
  parsePath,
} from '../src/index.js'

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn()
    return undefined
  } catch (error) {
    expect(error).toBeInstanceOf(FsError)
    return (error as FsError).code
  }
}

describe('normalizePath', () => {
  test.each([
    ['/', '/'],
    ['', undefined],
    ['a/b', '/a/b'],
    ['/a//b/./c/', '/a/b/c'],
    ['/a/b/../c', '/a/c'],
    ['/../../x', '/x'],
    ['..', '/'],
    ['/a/./../..', '/'],
  ])('%j → %j', (input, expected) => {
    if (expected === undefined) expect(codeOf(() => normalizePath(input))).toBe('ENOENT')
    else expect(normalizePath(input)).toBe(expected)
  })

  test('accepts file: URLs and rejects other types', () => {
    expect(normalizePath(new URL('file:///tmp/x'))).toBe('/tmp/x')
    expect(codeOf(() => normalizePath(new URL('https://example.com/x')))).toBe('EINVAL')
    expect(codeOf(() => normalizePath(42))).toBe('EINVAL')
    expect(codeOf(() => normalizePath(undefined))).toBe('EINVAL')
  })
})

describe('parsePath', () => {
  test('keeps .. for the resolver and records a trailing slash', () => {
    expect(parsePath('/a/../b/', 'stat')).toEqual({
      parts: ['a', '..', 'b'],
      trailingSlash: true,
      input: '/a/../b/',
    })
    expect(parsePath('/', 'stat')).toEqual({ parts: [], trailingSlash: false, input: '/' })
  })

  test('NUL is EINVAL', () => {
    expect(codeOf(() => parsePath('/a\0b', 'open'))).toBe('EINVAL')
  })

  test('a component over 255 bytes is ENAMETOOLONG, 255 is fine', () => {
    expect(parsePath(`/${'a'.repeat(255)}`, 'open').parts[0]).toHaveLength(255)
    expect(codeOf(() => parsePath(`/${'a'.repeat(256)}`, 'open'))).toBe('ENAMETOOLONG')
    // 128 two-byte characters are 256 bytes.
    expect(codeOf(() => parsePath(`/${'é'.repeat(128)}`, 'open'))).toBe('ENAMETOOLONG')
    expect(parsePath(`/${'é'.repeat(127)}`, 'open').parts).toHaveLength(1)
  })

  test('a path over 4096 bytes is ENAMETOOLONG, 4096 is fine', () => {
    const ok = `/${Array.from({ length: 16 }, () => 'b'.repeat(255)).join('/')}`.slice(0, 4096)
    expect(Buffer.byteLength(ok)).toBe(4096)
    expect(() => parsePath(ok, 'open')).not.toThrow()
    expect(codeOf(() => parsePath(`${ok}x`, 'open'))).toBe('ENAMETOOLONG')
  })

  test('the error message follows Node', () => {
    try {
      parsePath('/a\0b', 'open')
    } catch (error) {
      expect((error as Error).message).toMatch(/^EINVAL: invalid argument, open '/)
    }
  })
})

describe('path helpers', () => {
  test('parentPath follows the whiteout rule', () => {
    expect(parentPath('/')).toBe('/')
    expect(parentPath('/foo')).toBe('/')
    expect(parentPath('/foo/bar')).toBe('/foo')
  })
  test('baseName, joinPath, isWithin', () => {
    expect(baseName('/a/b.txt')).toBe('b.txt')
    expect(baseName('/')).toBe('')
    expect(joinPath('/', 'a')).toBe('/a')
    expect(joinPath('/a', 'b')).toBe('/a/b')
    expect(isWithin('/a/b', '/a')).toBe(true)
    expect(isWithin('/a', '/a')).toBe(true)
    expect(isWithin('/ab', '/a')).toBe(false)
    expect(isWithin('/x', '/')).toBe(true)
  })
})
