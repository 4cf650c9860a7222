import { runConformance } from '@agentfs/conformance'
import { betterSqlite3Driver } from '@agentfs/driver-better-sqlite3'

runConformance({
  name: 'better-sqlite3 :memory:',
  createDriver: () => betterSqlite3Driver({ path: ':memory:' }),
})
