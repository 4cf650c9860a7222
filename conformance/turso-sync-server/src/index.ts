import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'

/** A running `tursodb --sync-server`. */
export interface SyncServer {
  /** `http://127.0.0.1:PORT`. */
  readonly url: string
  /** The server's database file. */
  readonly file: string
  /** Stops the server (by its pid) and removes its folder. Idempotent. */
  stop(): Promise<void>
}

const PLATFORMS: Record<string, string> = {
  'linux-x64': '@tursodatabase/cli-linux-x64-gnu',
  'linux-arm64': '@tursodatabase/cli-linux-arm64-gnu',
  'darwin-arm64': '@tursodatabase/cli-darwin-arm64',
  'darwin-x64': '@tursodatabase/cli-darwin-x64',
}

/** The `tursodb` binary the `turso` package installed for this platform. */
export function tursodbPath(): string {
  const platform = PLATFORMS[`${process.platform}-${process.arch}`]
  if (platform === undefined)
    throw new Error(`no tursodb binary for ${process.platform}-${process.arch}`)
  const fromTurso = createRequire(createRequire(import.meta.url).resolve('turso/package.json'))
  return join(dirname(fromTurso.resolve(`${platform}/package.json`)), 'tursodb')
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
}

/** True once the server answers a statement over HTTP (not merely accepts connections). */
async function answers(port: number): Promise<boolean> {
  try {
    const response = await fetch(`http://127.0.0.1:${port}/v2/pipeline`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ requests: [{ type: 'execute', stmt: { sql: 'SELECT 1' } }] }),
      signal: AbortSignal.timeout(1000),
    })
    await response.arrayBuffer()
    return response.ok
  } catch {
    return false
  }
}

/**
 * Starts `tursodb DB --sync-server 127.0.0.1:PORT` on a free port, in a new folder, bounded by
 * `timeout` (it is killed after `maxSeconds` even if the caller never stops it), and waits until
 * it accepts connections.
 */
export async function startSyncServer(options: { maxSeconds?: number } = {}): Promise<SyncServer> {
  const dir = mkdtempSync(join(tmpdir(), 'agentfs-sync-server-'))
  const file = join(dir, 'server.db')
  for (let attempt = 0; ; attempt++) {
    const port = await freePort()
    const child: ChildProcess = spawn(
      'timeout',
      [
        String(options.maxSeconds ?? 600),
        tursodbPath(),
        file,
        '--sync-server',
        `127.0.0.1:${port}`,
      ],
      { stdio: 'ignore' },
    )
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
    let up = false
    for (let i = 0; i < 200 && child.exitCode === null; i++) {
      if (await answers(port)) {
        up = true
        break
      }
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
    if (!up) {
      child.kill('SIGKILL')
      await exited
      // Another process took the port between the probe and the bind: try another.
      if (attempt < 3) continue
      rmSync(dir, { recursive: true, force: true })
      throw new Error(`tursodb --sync-server did not start on 127.0.0.1:${port}`)
    }
    let stopped: Promise<void> | undefined
    return {
      url: `http://127.0.0.1:${port}`,
      file,
      stop() {
        stopped ??= (async () => {
          if (child.exitCode === null) {
            child.kill('SIGTERM')
            const timer = setTimeout(() => child.kill('SIGKILL'), 2000)
            await exited
            clearTimeout(timer)
          }
          rmSync(dir, { recursive: true, force: true })
        })()
        return stopped
      },
    }
  }
}
