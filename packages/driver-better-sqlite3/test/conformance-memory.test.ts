import { runConformance } from '@agentfs/conformance'
import { betterSqlite3Driver } from '../src/index.js'

runConformance({
  name: 'better-sqlite3 :memory:',
  createDriver: () => betterSqlite3Driver({ path: ':memory:' }),
})
