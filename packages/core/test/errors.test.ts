import { describe, expect, test } from 'vitest'
import { AgentFsError, FsError, fsError, isAgentFsError, twoPathErrors } from '../src/index.js'

describe('AgentFsError', () => {
  test('carries a code, a cause and a brand', () => {
    const cause = new Error('native')
    const error = new AgentFsError('BUSY', 'locked', { cause })
    expect(error.code).toBe('BUSY')
    expect(error.cause).toBe(cause)
    expect(error.name).toBe('AgentFsError')
    expect(isAgentFsError(error)).toBe(true)
    expect(isAgentFsError(error, 'BUSY')).toBe(true)
    expect(isAgentFsError(error, 'FULL')).toBe(false)
  })

  test('the brand check works across copies and rejects look-alikes', () => {
    // An error from another installed copy carries the same global-symbol brand.
    const foreign = Object.assign(new Error('x'), {
      code: 'BUSY',
      [Symbol.for('@agentfs/error')]: true,
    })
    expect(isAgentFsError(foreign, 'BUSY')).toBe(true)
    expect(isAgentFsError(Object.assign(new Error('x'), { code: 'BUSY' }))).toBe(false)
    expect(isAgentFsError(null)).toBe(false)
    expect(isAgentFsError('BUSY')).toBe(false)
  })
})

describe('FsError', () => {
  test('looks like a Node SystemError', () => {
    const error = fsError('ENOENT', 'open', '/a/b.txt')
    expect(error.message).toBe("ENOENT: no such file or directory, open '/a/b.txt'")
    expect(error.errno).toBe(-2)
    expect(error.syscall).toBe('open')
    expect(error.path).toBe('/a/b.txt')
    expect(error.name).toBe('FsError')
    expect(isAgentFsError(error, 'ENOENT')).toBe(true)
  })

  test('two-path operations name both paths; hints are appended', () => {
    const error = new FsError({
      code: 'EXDEV',
      syscall: 'rename',
      path: '/a',
      dest: '/b',
      hint: 'copy instead',
    })
    expect(error.message).toBe(
      "EXDEV: cross-device link not permitted, rename '/a' -> '/b' (copy instead)",
    )
    expect(error.dest).toBe('/b')
  })

  test('errno values match Linux', () => {
    expect(fsError('EEXIST', 'mkdir').errno).toBe(-17)
    expect(fsError('ENOTEMPTY', 'rmdir').errno).toBe(-39)
    expect(fsError('ELOOP', 'open').errno).toBe(-40)
  })
})

test('twoPathErrors: both paths in every filesystem error; other errors pass through unchanged', async () => {
  const { fail, wrap } = twoPathErrors('rename', '/a', '/b')
  expect(fail('EEXIST').message).toBe("EEXIST: file already exists, rename '/a' -> '/b'")
  const rewrapped = await wrap(Promise.reject(fsError('ENOENT', 'lstat', '/a/x'))).catch((e) => e)
  expect(rewrapped).toMatchObject({ code: 'ENOENT', syscall: 'rename', path: '/a', dest: '/b' })
  const other = new AgentFsError('BUSY', 'locked')
  expect(await wrap(Promise.reject(other)).catch((e) => e)).toBe(other)
  const plain = new TypeError('boom')
  expect(await wrap(Promise.reject(plain)).catch((e) => e)).toBe(plain)
  expect(await wrap(Promise.resolve(7))).toBe(7)
})
