// Compile-time test (run by `pnpm typecheck`): the real better-sqlite3 classes satisfy the
// structural types the driver declares, so the driver needs no type dependency on the client.
import Database from 'better-sqlite3'
import type { BetterSqlite3Database, BetterSqlite3Statement } from '../src/index.js'

const database: BetterSqlite3Database = new Database(':memory:')
const statement: BetterSqlite3Statement = new Database(':memory:').prepare('SELECT 1')

export { database, statement }
