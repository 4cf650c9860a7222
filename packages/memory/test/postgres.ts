import { execFileSync, spawnSync } from 'node:child_process'
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'

/**
 * A PostgreSQL server for a test: `initdb` on a temporary directory, `pg_ctl start` on
 * 127.0.0.1 and a free port, stopped (and the directory removed) by `stop`. As root, the server
 * runs as the `postgres` user (PostgreSQL refuses root). Without PostgreSQL installed the tests
 * are skipped — except in CI, where `.ci/run` installs Debian's `postgresql` and its absence is
 * a failure.
 */
export interface TestPostgres {
  /** The superuser's URL (database `postgres`). */
  readonly adminUrl: string
  /** A URL of `role` on `database`. */
  url(role: string, database?: string): string
  /** Runs SQL as the superuser on `database` (default `memory`). */
  admin(sql: string, params?: unknown[], database?: string): Promise<pg.QueryResult>
  stop(): Promise<void>
}

function binDir(): string | undefined {
  const root = '/usr/lib/postgresql'
  if (!existsSync(root)) return undefined
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a))
  return versions[0] === undefined ? undefined : join(root, versions[0], 'bin')
}

/** Why the tests cannot start PostgreSQL here, or undefined when they can. */
export const postgresProblem: string | undefined = binDir()
  ? undefined
  : 'PostgreSQL is not installed (apt-get install postgresql)'
if (postgresProblem !== undefined && process.env.CI === 'true')
  throw new Error(`${postgresProblem}; CI must run the Postgres tests`)

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0))
    })
  })
}

export async function startPostgres(): Promise<TestPostgres> {
  const bin = binDir()!
  const dir = mkdtempSync(join(tmpdir(), 'agentfs-pg-'))
  const asRoot = process.getuid?.() === 0
  const ids = asRoot
    ? {
        uid: Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim()),
        gid: Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim()),
      }
    : {}
  if (asRoot) chownSync(dir, ids.uid!, ids.gid!)
  const run = (cmd: string, args: string[]) => {
    const r = spawnSync(join(bin, cmd), args, { ...ids, encoding: 'utf8', cwd: dir })
    if (r.status !== 0)
      throw new Error(`${cmd} failed (${r.status}): ${r.stderr || r.stdout || r.error?.message}`)
  }
  const data = join(dir, 'data')
  run('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync'])
  const port = await freePort()
  run('pg_ctl', [
    '-D',
    data,
    '-l',
    join(dir, 'log'),
    '-w',
    '-o',
    `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=50`,
    'start',
  ])
  const url = (role: string, database = 'memory') =>
    `postgres://${role}@127.0.0.1:${port}/${database}`
  const pools = new Map<string, pg.Pool>()
  const poolOf = (database: string) => {
    let pool = pools.get(database)
    if (!pool) {
      pool = new pg.Pool({ connectionString: url('postgres', database), max: 2 })
      pools.set(database, pool)
    }
    return pool
  }
  // The service role owns the events database; it is not a superuser, so row-level security
  // is what it would be in production.
  await poolOf('postgres').query('CREATE ROLE memory_service LOGIN CREATEROLE')
  await poolOf('postgres').query('CREATE DATABASE memory OWNER memory_service')
  return {
    adminUrl: url('postgres', 'postgres'),
    url,
    admin: (sql, params, database = 'memory') => poolOf(database).query(sql, params),
    async stop() {
      for (const pool of pools.values()) await pool.end().catch(() => undefined)
      try {
        run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop'])
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    },
  }
}
