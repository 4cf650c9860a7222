const BRAND = Symbol.for('@agentfs/error')

/**
 * Codes of storage-level errors. Callers branch on `error.code`; the set is closed so a
 * `switch` over it can be exhaustive.
 */
export const ErrorCode = {
  /** The database is locked by another connection and the busy timeout ran out. */
  BUSY: 'BUSY',
  /** A UNIQUE or PRIMARY KEY constraint failed. */
  CONSTRAINT_UNIQUE: 'CONSTRAINT_UNIQUE',
  /** A FOREIGN KEY constraint failed. */
  CONSTRAINT_FOREIGN_KEY: 'CONSTRAINT_FOREIGN_KEY',
  /** A NOT NULL constraint failed. */
  CONSTRAINT_NOT_NULL: 'CONSTRAINT_NOT_NULL',
  /** Any other constraint (CHECK, trigger RAISE, …) failed. */
  CONSTRAINT: 'CONSTRAINT',
  /** The disk or the database's `max_page_count` is full. */
  FULL: 'FULL',
  /** The audit's payload store is at its budget: a tool call was refused before it ran. */
  AUDIT_FULL: 'AUDIT_FULL',
  /** The database was opened read-only or the file is not writable. */
  READONLY: 'READONLY',
  /** The database or driver was closed before or during the call. */
  CLOSED: 'CLOSED',
  /** The engine reported an I/O error. */
  IO: 'IO',
  /** The file is corrupt or is not a database. */
  CORRUPT: 'CORRUPT',
  /** The database file could not be opened. */
  CANT_OPEN: 'CANT_OPEN',
  /**
   * The database is encrypted and the key given does not open it: a wrong key or cipher, no key
   * for an encrypted file, or a key for a file that is not encrypted.
   */
  WRONG_KEY: 'WRONG_KEY',
  /** A string or BLOB exceeded the engine's size limit. */
  TOO_BIG: 'TOO_BIG',
  /** The statement was interrupted. */
  INTERRUPTED: 'INTERRUPTED',
  /** The SQL was rejected (syntax error, missing table, wrong parameter count, …). */
  SQL: 'SQL',
  /** The API was used in a way its contract forbids (e.g. a transaction handle used after it ended). */
  MISUSE: 'MISUSE',
  /** An argument was rejected before touching the database. */
  INVALID_ARGUMENT: 'INVALID_ARGUMENT',
  /** The database layout is not one this version can open or migrate. */
  UNSUPPORTED_LAYOUT: 'UNSUPPORTED_LAYOUT',
  /** A migration failed; the database was left as it was. */
  MIGRATION_FAILED: 'MIGRATION_FAILED',
  /** An optimistic-concurrency check (version token) failed. */
  CONFLICT: 'CONFLICT',
  /** A text patch did not apply cleanly to the file; nothing was written. */
  PATCH_FAILED: 'PATCH_FAILED',
  /** A remote server answered with an error that maps to nothing above. */
  REMOTE: 'REMOTE',
  /** Anything the driver could not classify. `cause` holds the original error. */
  UNKNOWN: 'UNKNOWN',
} as const

/** Union of the storage-level error codes. */
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode]

/** Options shared by every AgentFS error constructor. */
export interface AgentFsErrorOptions {
  /** The original error (driver, engine or user callback). */
  readonly cause?: unknown
}

/**
 * Base class of every error AgentFS throws on purpose. Use {@link isAgentFsError} rather than
 * `instanceof`, so two installed copies of the package still recognise each other's errors.
 */
export class AgentFsError<Code extends string = ErrorCode> extends Error {
  /** Stable machine-readable code; branch on this, never on the message. */
  readonly code: Code

  constructor(code: Code, message: string, options: AgentFsErrorOptions = {}) {
    super(message, 'cause' in options ? { cause: options.cause } : undefined)
    this.code = code
    Object.defineProperty(this, BRAND, { value: true })
  }

  override get name(): string {
    return 'AgentFsError'
  }
}

/**
 * Brand check that works across package copies. With `code`, also checks the error's code.
 *
 * @example
 * if (isAgentFsError(err, 'BUSY')) retryLater()
 */
export function isAgentFsError<Code extends string = ErrorCode | PosixCode>(
  error: unknown,
  code?: Code,
): error is AgentFsError<Code> {
  if (typeof error !== 'object' || error === null) return false
  if ((error as Record<symbol, unknown>)[BRAND] !== true) return false
  return code === undefined || (error as { code?: unknown }).code === code
}

/**
 * Brand check for a filesystem error ({@link FsError}: a POSIX code and a syscall) that works
 * across package copies. With `code`, also checks the error's code.
 */
export function isFsError(error: unknown, code?: PosixCode): error is FsError {
  if (!isAgentFsError(error, code)) return false
  const e = error as { code: string; syscall?: unknown }
  return e.code in POSIX_ERRORS && typeof e.syscall === 'string'
}

/**
 * Errors of a call on two paths (rename, link, copyfile) name both, as Node's do: `fail(code)`
 * makes one, `wrap(promise)` re-raises a filesystem error from resolving either path with both
 * paths; other errors pass through unchanged.
 */
export function twoPathErrors(
  syscall: string,
  path: string,
  dest: string,
): { fail(code: PosixCode): FsError; wrap<T>(promise: Promise<T>): Promise<T> } {
  const fail = (code: PosixCode) => new FsError({ code, syscall, path, dest })
  return {
    fail,
    wrap: (promise) =>
      promise.catch((error: unknown) => {
        throw isFsError(error) ? fail(error.code) : error
      }),
  }
}

/** POSIX error numbers (Linux values) and Node's message text for each code we raise. */
export const POSIX_ERRORS = {
  EPERM: [1, 'operation not permitted'],
  ENOENT: [2, 'no such file or directory'],
  EIO: [5, 'i/o error'],
  EBADF: [9, 'bad file descriptor'],
  EAGAIN: [11, 'resource temporarily unavailable'],
  EACCES: [13, 'permission denied'],
  EBUSY: [16, 'resource busy or locked'],
  EEXIST: [17, 'file already exists'],
  EXDEV: [18, 'cross-device link not permitted'],
  ENOTDIR: [20, 'not a directory'],
  EISDIR: [21, 'illegal operation on a directory'],
  EINVAL: [22, 'invalid argument'],
  EMFILE: [24, 'too many open files'],
  EFBIG: [27, 'file too large'],
  ENOSPC: [28, 'no space left on device'],
  EROFS: [30, 'read-only file system'],
  EMLINK: [31, 'too many links'],
  EDEADLK: [35, 'resource deadlock would occur'],
  ENAMETOOLONG: [36, 'name too long'],
  ENOSYS: [38, 'function not implemented'],
  ENOTEMPTY: [39, 'directory not empty'],
  ELOOP: [40, 'too many symbolic links encountered'],
  ENOTSUP: [95, 'operation not supported'],
  ETIMEDOUT: [110, 'operation timed out'],
  EDQUOT: [122, 'disk quota exceeded'],
  ECANCELED: [125, 'operation canceled'],
} as const satisfies Record<string, readonly [number, string]>

/** A POSIX error code the filesystem can raise. */
export type PosixCode = keyof typeof POSIX_ERRORS

/** Fields of an {@link FsError}. */
export interface FsErrorInit extends AgentFsErrorOptions {
  readonly code: PosixCode
  /** The operation, named like Node's (`open`, `rename`, `scandir`, …). */
  readonly syscall: string
  readonly path?: string
  /** Second path of two-path operations (`rename`, `link`, `copyfile`, `symlink`). */
  readonly dest?: string
  /** Extra advice appended to the message, e.g. what to do instead. */
  readonly hint?: string
}

/**
 * A filesystem error shaped like Node's `SystemError`: `code`, negative `errno`, `syscall`,
 * `path`, `dest`, and the message `ENOENT: no such file or directory, open '/a/b.txt'`.
 */
export class FsError extends AgentFsError<PosixCode> {
  /** Negative errno, as Node reports it (`-2` for ENOENT). */
  readonly errno: number
  readonly syscall: string
  readonly path: string | undefined
  readonly dest: string | undefined
  /** The advice at the end of the message, if any (not enumerable: the error serialises as before). */
  declare readonly hint: string | undefined

  constructor(init: FsErrorInit) {
    const [errno, text] = POSIX_ERRORS[init.code]
    let message = `${init.code}: ${text}, ${init.syscall}`
    if (init.path !== undefined) message += ` '${init.path}'`
    if (init.dest !== undefined) message += ` -> '${init.dest}'`
    if (init.hint !== undefined) message += ` (${init.hint})`
    super(init.code, message, 'cause' in init ? { cause: init.cause } : {})
    this.errno = -errno
    this.syscall = init.syscall
    this.path = init.path
    this.dest = init.dest
    Object.defineProperty(this, 'hint', { value: init.hint, enumerable: false })
  }

  override get name(): string {
    return 'FsError'
  }
}

/** Shorthand for `new FsError({ code, syscall, path, ... })`. */
export function fsError(
  code: PosixCode,
  syscall: string,
  path?: string,
  extra: Omit<FsErrorInit, 'code' | 'syscall' | 'path'> = {},
): FsError {
  return new FsError(
    path === undefined ? { code, syscall, ...extra } : { code, syscall, path, ...extra },
  )
}

/**
 * A `.catch` handler for "look it up if it is there": returns `undefined` for `ENOENT` and
 * `ENOTDIR` (the path, or one of its parents, does not exist as a directory) and rethrows
 * every other error.
 */
export function undefinedIfAbsent(error: unknown): undefined {
  const code = (error as { code?: unknown } | null)?.code
  if (code === 'ENOENT' || code === 'ENOTDIR') return undefined
  throw error
}

/**
 * The error for damage found in a database while reading it (a cycle of directories, a chunk of
 * the wrong type, a name that cannot be a path component, …): EIO naming the inode, with advice.
 */
export function corruptError(
  syscall: string,
  path: string | undefined,
  what: string,
  extra: Omit<FsErrorInit, 'code' | 'syscall' | 'path' | 'hint'> = {},
): FsError {
  return fsError('EIO', syscall, path, {
    ...extra,
    hint: `the database is damaged: ${what}; run \`agentfs fsck\` to find and repair it`,
  })
}
