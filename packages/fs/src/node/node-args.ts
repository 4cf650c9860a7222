import { posix } from 'node:path'
import { fileURLToPath } from 'node:url'
import { FsError } from '@agentfs/core'
import type { FileSystem } from '../types.js'

/** A TypeError with Node's `code`, as Node raises for bad arguments. */
export function argError(code: string, message: string): TypeError {
  const error = new TypeError(message) as TypeError & { code: string }
  error.code = code
  return error
}

/**
 * A path argument as Node takes it: a string, a Buffer (UTF-8) or a `file:` URL; relative
 * paths start at `/` (the filesystem has no working directory). NUL bytes are refused as Node
 * refuses them.
 */
export function pathArg(value: unknown, name = 'path', syscall?: string): string {
  let path: string
  if (typeof value === 'string') path = value
  else if (value instanceof Uint8Array) path = Buffer.from(value).toString('utf8')
  else if (value instanceof URL) {
    if (value.protocol !== 'file:')
      throw argError('ERR_INVALID_URL_SCHEME', 'The URL must be of scheme file')
    path = fileURLToPath(value)
  } else
    throw argError(
      'ERR_INVALID_ARG_TYPE',
      `The "${name}" argument must be of type string or an instance of Buffer or URL. Received ${describe(value)}`,
    )
  if (path.includes('\0'))
    throw argError(
      'ERR_INVALID_ARG_VALUE',
      `The argument '${name}' must be a string, Uint8Array, or URL without null bytes. Received ${JSON.stringify(path)}`,
    )
  // Node: an empty path names nothing.
  if (path === '' && syscall !== undefined) throw new FsError({ code: 'ENOENT', syscall, path })
  return path.startsWith('/') ? path : posix.resolve('/', path)
}

/**
 * A mode as Node takes it: an unsigned 32-bit integer or an octal string (`'755'`); anything
 * else is ERR_INVALID_ARG_VALUE (a string) or ERR_INVALID_ARG_TYPE, with Node's wording.
 */
export function modeArg(value: unknown, name = 'mode'): number | undefined {
  if (value === undefined || value === null) return undefined
  if (typeof value === 'string') {
    if (!/^[0-7]+$/.test(value))
      throw argError(
        'ERR_INVALID_ARG_VALUE',
        `The argument '${name}' must be a 32-bit unsigned integer or an octal string. Received '${value}'`,
      )
    return Number.parseInt(value, 8)
  }
  return unsignedArg(value, name, 0xffffffff)
}

/** An integer in 0..`max`, with Node's errors (ERR_INVALID_ARG_TYPE, ERR_OUT_OF_RANGE). */
function unsignedArg(value: unknown, name: string, max: number): number {
  if (typeof value !== 'number')
    throw argError(
      'ERR_INVALID_ARG_TYPE',
      `The "${name}" argument must be of type number. Received ${describe(value)}`,
    )
  const range = !Number.isInteger(value)
    ? 'an integer'
    : value < 0 || value > max
      ? `>= 0 && <= ${max}`
      : undefined
  if (range !== undefined)
    throw Object.assign(
      new RangeError(
        `The value of "${name}" is out of range. It must be ${range}. Received ${value}`,
      ),
      { code: 'ERR_OUT_OF_RANGE' },
    )
  return value
}

function describe(value: unknown): string {
  if (value === null) return 'null'
  if (value === undefined) return 'undefined'
  if (typeof value === 'function') return `function ${value.name}`
  if (typeof value === 'object')
    return value.constructor?.name ? `an instance of ${value.constructor.name}` : 'an object'
  return `type ${typeof value} (${JSON.stringify(value)})`
}

const TEMP_CHARS = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'
/** Tries before `mkdtemp` gives up (EEXIST), as a bound on a directory full of names. */
const TEMP_TRIES = 100

/**
 * `mkdtemp(prefix)`: creates a new directory `prefix` + six random characters (mode 0700, as
 * Node's), retrying on a clash, and returns its path.
 */
export async function mkdtemp(fs: FileSystem, prefix: unknown): Promise<string> {
  const base = pathArg(prefix, 'prefix')
  for (let attempt = 0; attempt < TEMP_TRIES; attempt++) {
    let suffix = ''
    for (let i = 0; i < 6; i++) suffix += TEMP_CHARS[Math.floor(Math.random() * TEMP_CHARS.length)]
    const path = `${base}${suffix}`
    try {
      await fs.mkdir(path, { mode: 0o700 })
      return path
    } catch (error) {
      if ((error as { code?: string }).code !== 'EEXIST') throw error
    }
  }
  throw new FsError({
    code: 'EEXIST',
    syscall: 'mkdtemp',
    path: `${base}XXXXXX`,
    hint: `${TEMP_TRIES} random names were taken`,
  })
}

/**
 * {@link modeArg} for the filesystem's own methods: a bad mode is a typed `FsError` (EINVAL, with
 * Node's wording as the hint), as every bad input of the filesystem is; `toNodeFs` checks modes
 * first and keeps Node's own errors.
 */
export function fsMode(value: unknown, syscall: string, path?: string): number | undefined {
  try {
    return modeArg(value)
  } catch (error) {
    throw new FsError({
      code: 'EINVAL',
      syscall,
      ...(path === undefined ? {} : { path }),
      hint: (error as Error).message,
      cause: error,
    })
  }
}

/** {@link fsMode} for a mode that must be given (chmod). */
export function fsRequiredMode(value: unknown, syscall: string, path?: string): number {
  const mode = fsMode(value, syscall, path)
  if (mode === undefined)
    throw new FsError({
      code: 'EINVAL',
      syscall,
      ...(path === undefined ? {} : { path }),
      hint: 'a mode is required (a number or an octal string)',
    })
  return mode
}

/** A mode that must be given (chmod): Node's TypeError when it is missing. */
export function requiredMode(value: unknown, name = 'mode'): number {
  const mode = modeArg(value, name)
  if (mode === undefined)
    throw argError(
      'ERR_INVALID_ARG_TYPE',
      `The "${name}" argument must be of type number. Received ${describe(value)}`,
    )
  return mode
}

/** `mkdir`'s options (an object, or just a mode) with the mode as a number (a bad one EINVAL). */
export function mkdirOptions(
  options: unknown,
  path?: string,
): { recursive?: boolean; mode?: number } {
  if (typeof options === 'number' || typeof options === 'string')
    return { mode: fsMode(options, 'mkdir', path)! }
  if (options === undefined || options === null) return {}
  const o = options as { recursive?: boolean; mode?: unknown }
  const mode = fsMode(o.mode, 'mkdir', path)
  return {
    ...(o.recursive === undefined ? {} : { recursive: o.recursive }),
    ...(mode === undefined ? {} : { mode }),
  }
}

/** A file descriptor as Node checks one: an integer in 0..2147483647 (before it is looked up). */
export function fdArg(value: unknown): number {
  return unsignedArg(value, 'fd', 0x7fffffff)
}
