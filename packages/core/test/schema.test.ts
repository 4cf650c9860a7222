import { readFileSync } from 'node:fs'
import { describe, expect, test } from 'vitest'
import { normalizeDdl, SPEC_INDEXES, SPEC_TABLES } from '../src/index.js'

const specStatements = readFileSync(new URL('./fixtures/spec-v0.4.sql', import.meta.url), 'utf8')
  .split('\n')
  .filter((line) => line.startsWith('CREATE'))
  .map((line) => line.replace(/;$/, ''))

describe('spec v0.4 DDL', () => {
  test('every table and index of the spec text is defined, and nothing else', () => {
    const ours = [...SPEC_TABLES, ...SPEC_INDEXES].map((o) => normalizeDdl(o.sql)).sort()
    expect(ours).toEqual(specStatements.map(normalizeDdl).sort())
  })

  test('names and owning tables are right', () => {
    for (const object of [...SPEC_TABLES, ...SPEC_INDEXES]) {
      expect(object.sql).toContain(` ${object.name} `)
      if (object.type === 'index') expect(object.sql).toContain(`ON ${object.table}(`)
    }
  })
})

describe('normalizeDdl', () => {
  test('ignores white space, IF NOT EXISTS, quoting and keyword case', () => {
    expect(normalizeDdl('CREATE INDEX IF NOT EXISTS idx ON t (a,  b)')).toBe(
      normalizeDdl('create index idx on t(a, b)'),
    )
    expect(normalizeDdl('CREATE TABLE "t" ( a INTEGER )')).toBe(
      normalizeDdl('CREATE TABLE t (a INTEGER)'),
    )
    expect(normalizeDdl('DEFAULT (unixepoch ())')).toBe(normalizeDdl('DEFAULT (unixepoch())'))
  })

  test('still tells different definitions apart', () => {
    expect(normalizeDdl('CREATE TABLE t (a INTEGER NOT NULL)')).not.toBe(
      normalizeDdl('CREATE TABLE t (a INTEGER)'),
    )
  })
})
