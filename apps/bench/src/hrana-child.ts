// The libSQL protocol test server for the remote benchmark, in a process of its own.
// Usage: node dist/hrana-child.js DB_PATH — prints the URL, stops when stdin closes.
import { startHranaServer } from '@agentfs/hrana-server'

const server = await startHranaServer({ path: process.argv[2]!, streamIdleMs: 60_000 })
process.stdout.write(`${server.url}\n`)
process.stdin.resume()
process.stdin.on('end', () => {
  void server.close().then(() => process.exit(0))
})
