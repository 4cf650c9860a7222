import { AgentFsError } from '../errors.js'

/**
 * `sql` with each `?` bound through a scalar subquery, `(SELECT ?)`: for the WHERE, ORDER and
 * LIMIT parts of a statement that goes through SQLite's full query planner (a join, a range, a
 * sort, a LIMIT). SQLite 3.54 inspects a parameter compared in a term or given as a LIMIT and
 * marks the statement to be prepared again when that parameter is rebound; better-sqlite3
 * clears the bindings after every run, so such a statement was prepared again on every run
 * (ARCHITECTURE.md, "Statement shapes"). A subquery is not inspected and plans the same.
 *
 * `sql` is library text: a `?` inside a string literal is refused (it is not a parameter).
 */
export function viaSubqueries(sql: string): string {
  const pieces = sql.split("'")
  if (pieces.length % 2 === 0)
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      `viaSubqueries: an unterminated string literal in ${JSON.stringify(sql)}`,
    )
  for (let i = 1; i < pieces.length; i += 2) {
    if (pieces[i]!.includes('?'))
      throw new AgentFsError(
        'INVALID_ARGUMENT',
        `viaSubqueries: a string literal holds "?" (not a parameter) in ${JSON.stringify(sql)}`,
      )
  }
  for (let i = 0; i < pieces.length; i += 2) pieces[i] = pieces[i]!.replaceAll('?', '(SELECT ?)')
  return pieces.join("'")
}
