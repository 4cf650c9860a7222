import { constants } from 'node:fs'
import { FsError } from '@agentfs/core'

/** What an open flag allows. */
export interface OpenMode {
  readonly read: boolean
  readonly write: boolean
  readonly create: boolean
  readonly truncate: boolean
  readonly exclusive: boolean
  readonly append: boolean
}

const STRING_FLAGS: Record<string, OpenMode> = {
  r: { read: true, write: false, create: false, truncate: false, exclusive: false, append: false },
  'r+': {
    read: true,
    write: true,
    create: false,
    truncate: false,
    exclusive: false,
    append: false,
  },
  rs: { read: true, write: false, create: false, truncate: false, exclusive: false, append: false },
  'rs+': {
    read: true,
    write: true,
    create: false,
    truncate: false,
    exclusive: false,
    append: false,
  },
  w: { read: false, write: true, create: true, truncate: true, exclusive: false, append: false },
  wx: { read: false, write: true, create: true, truncate: true, exclusive: true, append: false },
  'w+': { read: true, write: true, create: true, truncate: true, exclusive: false, append: false },
  'wx+': { read: true, write: true, create: true, truncate: true, exclusive: true, append: false },
  a: { read: false, write: true, create: true, truncate: false, exclusive: false, append: true },
  ax: { read: false, write: true, create: true, truncate: false, exclusive: true, append: true },
  as: { read: false, write: true, create: true, truncate: false, exclusive: false, append: true },
  'a+': { read: true, write: true, create: true, truncate: false, exclusive: false, append: true },
  'ax+': { read: true, write: true, create: true, truncate: false, exclusive: true, append: true },
  'as+': { read: true, write: true, create: true, truncate: false, exclusive: false, append: true },
}

/** Parses Node's open flags (`'r'`, `'wx+'`, …, or `O_*` numbers). */
export function parseFlags(flags: string | number, path: string): OpenMode {
  if (typeof flags === 'string') {
    const mode = STRING_FLAGS[flags]
    if (!mode)
      throw new FsError({ code: 'EINVAL', syscall: 'open', path, hint: `unknown flag '${flags}'` })
    return mode
  }
  if (!Number.isInteger(flags))
    throw new FsError({
      code: 'EINVAL',
      syscall: 'open',
      path,
      hint: 'flags must be a string or an integer',
    })
  const access = flags & 3
  return {
    read: access === constants.O_RDONLY || access === constants.O_RDWR,
    write: access === constants.O_WRONLY || access === constants.O_RDWR,
    create: (flags & constants.O_CREAT) !== 0,
    truncate: (flags & constants.O_TRUNC) !== 0,
    exclusive: (flags & constants.O_EXCL) !== 0,
    append: (flags & constants.O_APPEND) !== 0,
  }
}
