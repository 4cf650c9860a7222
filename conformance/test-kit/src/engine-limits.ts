import { type Driver, type Executor, type Statement, slotIds } from '@agentfs/core'

const RECURSIVE = /\bWITH\s+RECURSIVE\b/i

/**
 * `driver` as an engine that lacks a feature: `capabilities` says so, and every statement
 * `refused` matches fails with `message`, as such an engine fails it (in transactions too).
 */
function lacking(
  driver: Driver,
  name: string,
  capabilities: Partial<Driver['capabilities']>,
  refused: RegExp,
  message: (sql: string) => string,
): Driver {
  const refuse = (statement: Pick<Statement, 'sql'>) => {
    if (refused.test(statement.sql)) throw new Error(message(statement.sql.slice(0, 60)))
  }
  const guard = (executor: Executor): Executor => ({
    execute(statement) {
      refuse(statement)
      return executor.execute(statement)
    },
    ...(executor.defer
      ? {
          defer(statement: Statement) {
            refuse(statement)
            executor.defer!(statement)
          },
        }
      : {}),
  })
  return {
    name: `${driver.name} (${name})`,
    get capabilities() {
      return { ...driver.capabilities, ...capabilities }
    },
    execute: async (statement) => {
      refuse(statement)
      return driver.execute(statement)
    },
    transaction: (fn) => driver.transaction((tx) => fn(guard(tx))),
    executeScript: async (sql) => {
      refuse({ sql })
      return driver.executeScript(sql)
    },
    close: () => driver.close(),
  }
}

/**
 * `driver` as an engine without `WITH RECURSIVE` would be (the Turso engine 0.7): it says so in
 * `capabilities.recursiveQueries`, and any statement that uses one fails as such an engine
 * fails it. Running a suite on it proves the non-recursive paths are taken and correct.
 */
export function withoutRecursiveQueries(driver: Driver): Driver {
  return lacking(
    driver,
    'no WITH RECURSIVE',
    { recursiveQueries: false },
    RECURSIVE,
    (sql) => `prepare failed: Parse error: Recursive CTEs are not yet supported [sql: ${sql}]`,
  )
}

/**
 * `driver` as a synced database's driver is: rows of fs_inode, fs_dentry and tool_calls get the
 * slot's ids (`slotIds`) and whole-file writes replace the inode. Running a suite on it proves
 * those paths keep every filesystem behaviour.
 */
export function withSlotIds(driver: Driver, slot = 5): Driver {
  const capabilities = { ...driver.capabilities, sync: slotIds(slot) }
  return {
    name: `${driver.name} (slot ids)`,
    capabilities,
    execute: (statement) => driver.execute(statement),
    ...(driver.defer ? { defer: (statement: Statement) => driver.defer!(statement) } : {}),
    transaction: (fn) => driver.transaction(fn),
    executeScript: (sql) => driver.executeScript(sql),
    close: () => driver.close(),
  }
}

/**
 * `driver` as an engine without FTS5 is (the Turso engine 0.7): it says so
 * (`capabilities.fullTextSearch: false`) and refuses FTS5 statements, so the full-text index's
 * postings store runs on it; results must equal the FTS5 store's.
 */
export function withoutFts5(driver: Driver): Driver {
  return lacking(
    driver,
    'no FTS5',
    { fullTextSearch: false },
    /\bUSING\s+fts5\b|\b(FROM|INTO|UPDATE|TABLE)\s+agentfs_search_fts\b/i,
    (sql) => `no such module: fts5 [sql: ${sql}]`,
  )
}

/**
 * `driver` as an engine without libSQL's vector functions is (SQLite, `node:sqlite`): it says so
 * (`capabilities.vectors: false`) and refuses `vector_distance_cos`, so semantic search ranks in
 * JavaScript; results must equal the engine's.
 */
export function withoutVectors(driver: Driver): Driver {
  return lacking(
    driver,
    'no vector functions',
    { vectors: false },
    /\bvector_distance_cos\s*\(|\bvector32\s*\(/i,
    (sql) => `no such function: vector_distance_cos [sql: ${sql}]`,
  )
}
