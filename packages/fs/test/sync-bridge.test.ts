import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { MessageChannel, Worker } from 'node:worker_threads'
import { build } from 'esbuild'
import { afterAll, beforeAll, expect, test } from 'vitest'
import { portSyncBridge, SYNC_SHARED_BYTES } from '../src/index.js'

// The bridge's protocol with the real serveSync on a worker thread, over a stub filesystem
// whose reads take as long as their path says: what a late reply may and may not do.

const worker = join(import.meta.dirname, '..', '.tmp', `bridge-worker-${process.pid}.mjs`)

beforeAll(async () => {
  await build({
    stdin: {
      contents: `
        import { workerData } from 'node:worker_threads'
        import { serveSync } from '../src/index.js'
        const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
        const readFile = async (path) => { await sleep(Number(path.slice(1)) || 0); return path }
        serveSync(workerData.port, workerData.shared, Promise.resolve({ fs: {}, promises: { readFile } }))
      `,
      resolveDir: import.meta.dirname,
      loader: 'ts',
    },
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outfile: worker,
    conditions: ['@agentfs/source'],
    external: ['better-sqlite3'],
    logLevel: 'silent',
  })
}, 60_000)

afterAll(() => rmSync(worker, { force: true }))

test('a reply that comes after its call gave up is dropped and never moves the reply word', async () => {
  const shared = new SharedArrayBuffer(SYNC_SHARED_BYTES)
  const { port1, port2 } = new MessageChannel()
  const thread = new Worker(worker, { workerData: { port: port2, shared }, transferList: [port2] })
  try {
    const bridge = portSyncBridge(port1, shared, { timeoutMs: 200 })
    // The worker's first answer may take a while to start: wait for it.
    for (let i = 0; i < 100; i++)
      try {
        bridge.call('readFile', ['/0'])
        break
      } catch {}
    expect(() => bridge.call('readFile', ['/600'])).toThrow(/took over 200 ms.*changed nothing/)
    expect(bridge.call('readFile', ['/0'])).toBe('/0')
    const words = new Int32Array(shared)
    const answered = Atomics.load(words, 0)
    // The late reply of /600 arrives now: it must not claim to be the current call's.
    await new Promise((resolve) => setTimeout(resolve, 800))
    expect(Atomics.load(words, 0)).toBe(answered)
    expect(bridge.call('readFile', ['/1'])).toBe('/1')
  } finally {
    port1.close()
    await thread.terminate()
  }
})
