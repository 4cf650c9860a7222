import { describe, expect, test } from 'vitest'
import { AgentFsError, classifySqliteCode, mapSqliteError } from '../src/index.js'

describe('classifySqliteCode', () => {
  test.each([
    ['SQLITE_CONSTRAINT_UNIQUE', undefined, 'CONSTRAINT_UNIQUE'],
    ['SQLITE_CONSTRAINT_PRIMARYKEY', undefined, 'CONSTRAINT_UNIQUE'],
    ['SQLITE_CONSTRAINT_FOREIGNKEY', undefined, 'CONSTRAINT_FOREIGN_KEY'],
    ['SQLITE_CONSTRAINT_NOTNULL', undefined, 'CONSTRAINT_NOT_NULL'],
    ['SQLITE_CONSTRAINT_CHECK', undefined, 'CONSTRAINT'],
    ['SQLITE_BUSY_SNAPSHOT', undefined, 'BUSY'],
    ['SQLITE_FULL', undefined, 'FULL'],
    ['SQLITE_READONLY_DBMOVED', undefined, 'READONLY'],
    ['SQLITE_IOERR_WRITE', undefined, 'IO'],
    ['SQLITE_NOTADB', undefined, 'CORRUPT'],
    ['SQLITE_CANTOPEN', undefined, 'CANT_OPEN'],
    ['SQLITE_ERROR', undefined, 'SQL'],
    ['SQLITE_CONSTRAINT', 2067, 'CONSTRAINT_UNIQUE'],
    ['SQLITE_CONSTRAINT', 787, 'CONSTRAINT_FOREIGN_KEY'],
    [undefined, 5, 'BUSY'],
    [undefined, 13, 'FULL'],
    ['CLIENT_CLOSED', undefined, 'CLOSED'],
    ['SOMETHING_ELSE', undefined, 'UNKNOWN'],
  ])('%s / %s → %s', (code, extended, expected) => {
    expect(classifySqliteCode(code, extended)).toBe(expected)
  })
})

describe('mapSqliteError', () => {
  test('messages are one line, and a code prefix a client repeated appears once', () => {
    const error = Object.assign(
      new Error(
        'SQLITE_CONSTRAINT_PRIMARYKEY: SQLITE_CONSTRAINT_PRIMARYKEY: SQLite error: UNIQUE constraint failed: t.x',
      ),
      { code: 'SQLITE_CONSTRAINT_PRIMARYKEY' },
    )
    const mapped = mapSqliteError(error, { sql: 'INSERT INTO t VALUES (1)' })
    expect(mapped.code).toBe('CONSTRAINT_UNIQUE')
    expect(mapped.message).toMatch(
      /^SQLITE_CONSTRAINT_PRIMARYKEY: SQLite error: UNIQUE constraint failed: t\.x \[sql: INSERT INTO t VALUES \(1\)\]/,
    )
    const multi = mapSqliteError(
      Object.assign(new Error('near "SELEC":\n  syntax error'), { code: 'SQLITE_ERROR' }),
    )
    expect(multi.message).not.toMatch(/\n/)
  })

  test('keeps the cause, adds advice and the statement', () => {
    const native = Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' })
    const mapped = mapSqliteError(native, { sql: 'INSERT INTO t VALUES (1)' })
    expect(mapped.code).toBe('BUSY')
    expect(mapped.cause).toBe(native)
    expect(mapped.message).toContain('database is locked')
    expect(mapped.message).toContain('INSERT INTO t')
    expect(mapped.message).toContain('retry')
  })

  test('falls back to the message when there is no code', () => {
    expect(mapSqliteError(new Error('UNIQUE constraint failed: t.a')).code).toBe(
      'CONSTRAINT_UNIQUE',
    )
    expect(mapSqliteError(new TypeError('The database connection is not open')).code).toBe('CLOSED')
    expect(mapSqliteError('weird').code).toBe('UNKNOWN')
  })

  test('passes AgentFsErrors through unchanged', () => {
    const error = new AgentFsError('CONFLICT', 'x')
    expect(mapSqliteError(error)).toBe(error)
  })
})
