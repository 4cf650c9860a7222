import { runConformance } from '@agentfs/conformance'
import { libsqlDriver } from '../src/index.js'

runConformance({ name: 'libsql :memory:', createDriver: () => libsqlDriver({ url: ':memory:' }) })
