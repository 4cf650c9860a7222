// Compile-time test (run by `pnpm typecheck`): the real @libsql/client classes satisfy the
// structural types the driver declares, so the driver needs no type dependency on the client.
import { createClient } from '@libsql/client'
import type { LibsqlClient, LibsqlTransaction } from '../src/index.js'

const client: LibsqlClient = createClient({ url: ':memory:', intMode: 'bigint' })
export const transaction = async (): Promise<LibsqlTransaction> =>
  createClient({ url: ':memory:' }).transaction('write')
export { client }
