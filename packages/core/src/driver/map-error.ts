import { AgentFsError, type ErrorCode, isAgentFsError } from '../errors.js'

const BY_NAME: ReadonlyArray<readonly [prefix: string, code: ErrorCode]> = [
  ['SQLITE_CONSTRAINT_UNIQUE', 'CONSTRAINT_UNIQUE'],
  ['SQLITE_CONSTRAINT_PRIMARYKEY', 'CONSTRAINT_UNIQUE'],
  ['SQLITE_CONSTRAINT_FOREIGNKEY', 'CONSTRAINT_FOREIGN_KEY'],
  ['SQLITE_CONSTRAINT_NOTNULL', 'CONSTRAINT_NOT_NULL'],
  ['SQLITE_CONSTRAINT', 'CONSTRAINT'],
  ['SQLITE_BUSY', 'BUSY'],
  ['SQLITE_LOCKED', 'BUSY'],
  ['SQLITE_FULL', 'FULL'],
  ['SQLITE_READONLY', 'READONLY'],
  ['SQLITE_IOERR', 'IO'],
  ['SQLITE_CORRUPT', 'CORRUPT'],
  ['SQLITE_NOTADB', 'CORRUPT'],
  ['SQLITE_CANTOPEN', 'CANT_OPEN'],
  ['SQLITE_TOOBIG', 'TOO_BIG'],
  ['SQLITE_INTERRUPT', 'INTERRUPTED'],
  ['SQLITE_MISUSE', 'MISUSE'],
  ['SQLITE_RANGE', 'SQL'],
  ['SQLITE_MISMATCH', 'SQL'],
  ['SQLITE_ERROR', 'SQL'],
  ['CLIENT_CLOSED', 'CLOSED'],
]

/** Extended result codes (numeric) for engines that report only numbers. */
const BY_NUMBER = new Map<number, ErrorCode>([
  [2067, 'CONSTRAINT_UNIQUE'],
  [1555, 'CONSTRAINT_UNIQUE'],
  [787, 'CONSTRAINT_FOREIGN_KEY'],
  [1299, 'CONSTRAINT_NOT_NULL'],
])
const BY_PRIMARY = new Map<number, ErrorCode>([
  [1, 'SQL'],
  [5, 'BUSY'],
  [6, 'BUSY'],
  [8, 'READONLY'],
  [9, 'INTERRUPTED'],
  [10, 'IO'],
  [11, 'CORRUPT'],
  [13, 'FULL'],
  [14, 'CANT_OPEN'],
  [18, 'TOO_BIG'],
  [19, 'CONSTRAINT'],
  [20, 'SQL'],
  [21, 'MISUSE'],
  [25, 'SQL'],
  [26, 'CORRUPT'],
])

const ADVICE: Partial<Record<ErrorCode, string>> = {
  BUSY: 'another connection holds the write lock; retry, or raise the busy timeout',
  FULL: 'free disk space or raise the size limit, then retry',
  READONLY: 'open the database writable (check file permissions and the readonly option)',
  CORRUPT: 'the file is damaged or not a SQLite database; restore it from a backup',
  CANT_OPEN: 'check that the directory exists and is writable',
}

/** Classifies an engine error code (`SQLITE_BUSY`, `SQLITE_CONSTRAINT_UNIQUE`, 5, 2067, …). */
export function classifySqliteCode(code: unknown, extended?: unknown): ErrorCode {
  if (typeof extended === 'number') {
    const exact = BY_NUMBER.get(extended)
    if (exact) return exact
    const primary = BY_PRIMARY.get(extended & 0xff)
    if (primary) return primary
  }
  if (typeof code === 'string') {
    for (const [prefix, mapped] of BY_NAME) if (code.startsWith(prefix)) return mapped
  }
  if (typeof code === 'number') {
    return BY_NUMBER.get(code) ?? BY_PRIMARY.get(code & 0xff) ?? 'UNKNOWN'
  }
  return 'UNKNOWN'
}

/**
 * An engine's message on one line: line breaks become spaces, and a code prefix a client
 * repeated (`SQLITE_CONSTRAINT_PRIMARYKEY: SQLITE_CONSTRAINT_PRIMARYKEY: …`, libSQL batches)
 * appears once.
 */
function oneLine(message: string): string {
  return message
    .replace(/\s*\n\s*/g, ' ')
    .replace(/^([A-Z][A-Z0-9_]*: )(?:\1)+/, '$1')
    .trim()
}

/**
 * Maps any error an engine throws to an {@link AgentFsError}, keeping the original as `cause`.
 * Drivers call this; the core also applies it to anything a driver lets through.
 */
export function mapSqliteError(error: unknown, context?: { sql?: string }): AgentFsError {
  if (isAgentFsError(error)) return error as AgentFsError
  const source = (typeof error === 'object' && error !== null ? error : {}) as {
    code?: unknown
    rawCode?: unknown
    extendedCode?: unknown
    errcode?: unknown
    message?: unknown
  }
  let code = classifySqliteCode(
    source.code,
    source.rawCode ?? source.extendedCode ?? source.errcode,
  )
  const text = oneLine(typeof source.message === 'string' ? source.message : String(error))
  if (code === 'UNKNOWN' || code === 'SQL') {
    // Some clients only put the condition in the message.
    if (/UNIQUE constraint failed/i.test(text)) code = 'CONSTRAINT_UNIQUE'
    else if (/FOREIGN KEY constraint failed/i.test(text)) code = 'CONSTRAINT_FOREIGN_KEY'
    else if (/NOT NULL constraint failed/i.test(text)) code = 'CONSTRAINT_NOT_NULL'
    else if (/database (table )?is locked|SQLITE_BUSY/i.test(text)) code = 'BUSY'
    else if (/database or disk is full/i.test(text)) code = 'FULL'
    else if (/readonly database/i.test(text)) code = 'READONLY'
    else if (/cannot open database|unable to open database/i.test(text)) code = 'CANT_OPEN'
    else if (/file is not a database/i.test(text)) code = 'CORRUPT'
    else if (/database connection is not open|client is closed/i.test(text)) code = 'CLOSED'
  }
  const advice = ADVICE[code]
  const where = context?.sql
    ? ` [sql: ${context.sql.length > 120 ? `${context.sql.slice(0, 117)}...` : context.sql}]`
    : ''
  return new AgentFsError(code, `${text}${where}${advice ? ` (${advice})` : ''}`, { cause: error })
}
