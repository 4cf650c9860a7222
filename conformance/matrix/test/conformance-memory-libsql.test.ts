import { runConformance } from '@agentfs/conformance'
import { libsqlDriver } from '@agentfs/driver-libsql'

runConformance({ name: 'libsql :memory:', createDriver: () => libsqlDriver({ url: ':memory:' }) })
