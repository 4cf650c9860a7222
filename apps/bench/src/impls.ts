import { spawn } from 'node:child_process'
import { createReadStream, createWriteStream } from 'node:fs'
import {
  mkdir as mkdirHost,
  open as openHost,
  readdir as readdirHost,
  readFile,
  rename,
  rm as rmHost,
  stat,
  writeFile,
} from 'node:fs/promises'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { fileURLToPath } from 'node:url'
import { type AgentTool, createAgentTools } from '@agentfs/agent-tools'
import { libsqlDriver } from '@agentfs/driver-libsql'
import { tursoDriver } from '@agentfs/driver-turso'
import { HostFileSystem } from '@agentfs/overlay'
import { AgentFS } from '@agentfs/sdk'
import { RawSqlFs } from './raw-sql.js'
import { keptRows } from './raw-sql-kept.js'

/** What every workload needs from an implementation. Optional parts are "not applicable". */
export interface Impl {
  readonly name: string
  /** How durable a commit is, so rows compare like with like. */
  readonly durability: string
  /** Files whose total size is the implementation's footprint on disk. */
  readonly files: readonly string[]
  mkdir(path: string): Promise<void>
  writeFile(path: string, data: Buffer): Promise<void>
  readFile(path: string): Promise<Buffer>
  stat(path: string): Promise<{ size: number }>
  readdir(path: string): Promise<string[]>
  rename(from: string, to: string): Promise<void>
  /** `open(path, 'r')`, `read(buf, 0, length, offset)`, `close()`: a path-based pread. */
  pread(path: string, offset: number, length: number): Promise<Buffer>
  kvSet?(key: string, value: unknown): Promise<void>
  kvGet?(key: string): Promise<unknown>
  toolRecord?(name: string, parameters: unknown, result: unknown): Promise<void>
  /** Streams `mib` MiB into a file and back out, returning a checksum of what was read. */
  streamInOut?(path: string, mib: number): Promise<number>
  /** Round trips to a server so far (remote implementations), to report them per operation. */
  roundTrips?(): Promise<number>
  /** `rm -r` (W15). */
  rmTree?(path: string): Promise<void>
  /** How another process opens the same storage (W16, W17): `openImpl(name, dir)`. */
  readonly share?: { readonly name: ImplName; readonly dir: string }
  /** The agent tools over this storage (W11), when it can serve them. */
  agentTools?(): Map<string, AgentTool>
  close(): Promise<void>
}

export const IMPLEMENTATIONS = [
  'raw-sql',
  'raw-sql-full',
  'raw-sql-kept',
  'raw-sql-handles',
  'agentfs',
  'agentfs-full',
  'agentfs-noatime',
  'agentfs-nofeed',
  'agentfs-grouped',
  'agentfs-libsql',
  'agentfs-libsql-remote',
  'agentfs-turso',
  'agentfs-sdk-0.6.4',
  'node-fs',
] as const
export type ImplName = (typeof IMPLEMENTATIONS)[number]

/** `mib` chunks of 1 MiB with varying bytes, generated as they are consumed. */
export const megabytes = (mib: number) =>
  Readable.from(
    (function* () {
      for (let i = 0; i < mib; i++) yield Buffer.alloc(1024 * 1024, i & 255)
    })(),
  )

/** A cheap order-sensitive checksum (sum of every 4096th byte, weighted by position). */
export function checksum(sum: number, chunk: Buffer): number {
  let s = sum
  for (let i = 0; i < chunk.byteLength; i += 4096) s = (s * 31 + chunk[i]!) % 1_000_000_007
  return s
}

/** The operations whose names and meanings are the same on every filesystem-like API here. */
interface BasicFs {
  mkdir(path: string): Promise<unknown>
  writeFile(path: string, data: Buffer): Promise<void>
  readFile(path: string): Promise<Buffer>
  stat(path: string): Promise<{ size: number }>
  readdir(path: string): Promise<string[]>
  rename(from: string, to: string): Promise<void>
}
const delegate = (fs: BasicFs) => ({
  mkdir: async (p: string) => {
    await fs.mkdir(p)
  },
  writeFile: (p: string, d: Buffer) => fs.writeFile(p, d),
  readFile: (p: string) => fs.readFile(p),
  stat: (p: string) => fs.stat(p),
  readdir: (p: string) => fs.readdir(p),
  rename: (a: string, b: string) => fs.rename(a, b),
})

/** W6's read: the handle `opening` resolves to, one positional read, then close. */
async function preadOnce(
  opening: Promise<{
    read(b: Buffer, at: number, n: number, pos: number): Promise<{ bytesRead: number }>
    close(): Promise<void>
  }>,
  offset: number,
  length: number,
): Promise<Buffer> {
  const handle = await opening
  try {
    const buf = Buffer.allocUnsafe(length)
    const { bytesRead } = await handle.read(buf, 0, length, offset)
    return buf.subarray(0, bytesRead)
  } finally {
    await handle.close()
  }
}

const dbFiles = (path: string) => [path, `${path}-wal`, `${path}-shm`]

/**
 * Plain spec SQL; `kept`: with the rows AgentFS's guarantees add (see `raw-sql-kept.ts`), on a
 * database AgentFS created (so it has the extension tables).
 */
async function rawSql(
  dir: string,
  synchronous: 'NORMAL' | 'FULL',
  kept = false,
  handles = false,
): Promise<Impl> {
  const path = join(dir, 'raw.db')
  if (kept) await (await AgentFS.open({ path })).close()
  const fs = new RawSqlFs(path, synchronous, kept ? keptRows : undefined)
  return {
    name: handles
      ? 'raw-sql-handles'
      : kept
        ? 'raw-sql-kept'
        : synchronous === 'FULL'
          ? 'raw-sql-full'
          : 'raw-sql',
    durability: `WAL, synchronous=${synchronous}`,
    files: dbFiles(path),
    mkdir: (p) => fs.mkdir(p),
    writeFile: (p, d) => fs.writeFile(p, d),
    readFile: (p) => fs.readFile(p),
    stat: (p) => fs.stat(p),
    readdir: (p) => fs.readdir(p),
    rename: (a, b) => fs.rename(a, b),
    pread: handles ? (p, o, l) => fs.preadHandle(p, o, l) : (p, o, l) => fs.pread(p, o, l),
    rmTree: (p) => fs.rmTree(p),
    kvSet: (k, v) => fs.kvSet(k, v),
    kvGet: (k) => fs.kvGet(k),
    toolRecord: (n, p, r) => fs.toolRecord(n, p, r),
    close: () => fs.close(),
  }
}

/** The SDK configurations benchmarked: how each opens its database, its name and durability. */
const VARIANTS = {
  NORMAL: {
    name: 'agentfs',
    durability: 'WAL, synchronous=NORMAL',
    open: (path: string) => AgentFS.open({ path, synchronous: 'NORMAL' }),
  },
  FULL: {
    name: 'agentfs-full',
    durability: 'WAL, synchronous=FULL',
    open: (path: string) => AgentFS.open({ path, synchronous: 'FULL' }),
  },
  libsql: {
    name: 'agentfs-libsql',
    durability: 'WAL (libSQL defaults)',
    open: (path: string) => AgentFS.open({ driver: libsqlDriver({ url: `file:${path}` }) }),
  },
  turso: {
    name: 'agentfs-turso',
    durability: 'WAL, synchronous=NORMAL (Turso engine)',
    open: (path: string) => AgentFS.open({ driver: tursoDriver({ path }) }),
  },
  noatime: {
    name: 'agentfs-noatime',
    durability: 'WAL, synchronous=NORMAL, noatime',
    open: (path: string) => AgentFS.open({ path, fs: { atime: 'noatime' } }),
  },
  grouped: {
    name: 'agentfs-grouped',
    durability: 'WAL, synchronous=NORMAL, commits grouped (20 ms)',
    open: (path: string) => AgentFS.open({ path, groupCommits: { maxDelayMs: 20 } }),
  },
  nofeed: {
    name: 'agentfs-nofeed',
    durability: 'WAL, synchronous=NORMAL, no change feed',
    open: (path: string) => AgentFS.open({ path, feed: false }),
  },
} as const

async function agentfs(
  dir: string,
  variant: keyof typeof VARIANTS,
  remoteUrl?: string,
): Promise<Impl> {
  const path = join(dir, 'agent.db')
  const agent =
    remoteUrl !== undefined
      ? await AgentFS.open({ driver: libsqlDriver({ url: remoteUrl }) })
      : await VARIANTS[variant].open(path)
  return {
    name: VARIANTS[variant].name,
    durability: VARIANTS[variant].durability,
    files: dbFiles(path),
    ...delegate(agent.fs),
    pread: (p, o, l) => preadOnce(agent.fs.open(p, 'r'), o, l),
    rmTree: (p) => agent.fs.rm(p, { recursive: true }),
    kvSet: (k, v) => agent.kv.set(k, v).then(() => undefined),
    kvGet: (k) => agent.kv.get(k),
    toolRecord: async (n, p, r) => {
      const now = Date.now()
      await agent.tools.record({
        name: n,
        parameters: p,
        result: r,
        startedAt: now,
        completedAt: now,
      })
    },
    agentTools: () =>
      createAgentTools({ fs: agent.fs, kv: agent.kv, audit: agent.tools, sessionId: 'bench' }),
    streamInOut: async (p, mib) => {
      await pipeline(megabytes(mib), agent.fs.createWriteStream(p))
      let sum = 0
      for await (const chunk of agent.fs.createReadStream(p)) sum = checksum(sum, chunk as Buffer)
      return sum
    },
    close: () => agent.close(),
  }
}

async function reference(dir: string): Promise<Impl> {
  const { AgentFS: Reference } = await import('agentfs-sdk')
  const path = join(dir, 'reference.db')
  const agent = await Reference.open({ path })
  return {
    name: 'agentfs-sdk-0.6.4',
    durability: 'its defaults (WAL)',
    files: dbFiles(path),
    ...delegate(agent.fs),
    // Its handles have no close: opening one is all there is to release.
    pread: async (p, o, l) => (await agent.fs.open(p)).pread(o, l),
    kvSet: (k, v) => agent.kv.set(k, v),
    kvGet: (k) => agent.kv.get(k),
    toolRecord: async (n, p, r) => {
      const now = Math.floor(Date.now() / 1000)
      await agent.tools.record(n, now, now, p, r)
    },
    close: () => agent.close(),
  }
}

function nodeFs(dir: string): Impl {
  const root = join(dir, 'tree')
  const at = (p: string) => join(root, p)
  return {
    name: 'node-fs',
    durability: 'page cache, no fsync',
    files: [],
    agentTools: () => createAgentTools({ fs: new HostFileSystem({ root, writable: true }) }),
    streamInOut: async (p, mib) => {
      await pipeline(megabytes(mib), createWriteStream(at(p)))
      let sum = 0
      for await (const chunk of createReadStream(at(p))) sum = checksum(sum, chunk as Buffer)
      return sum
    },
    mkdir: (p) => mkdirHost(at(p), { recursive: true }).then(() => undefined),
    writeFile: (p, d) => writeFile(at(p), d),
    readFile: (p) => readFile(at(p)),
    stat: (p) => stat(at(p)),
    readdir: (p) => readdirHost(at(p)),
    rename: (a, b) => rename(at(a), at(b)),
    pread: (p, o, l) => preadOnce(openHost(at(p), 'r'), o, l),
    rmTree: (p) => rmHost(at(p), { recursive: true }),
    close: async () => {},
  }
}

/**
 * Implementations another process can open on the same storage, for W16 and W17: all but the
 * remote one (its server lives in the first process), the Turso engine's (it refuses a second
 * process on a file) and the reference SDK (not measured for this).
 */
const SHAREABLE: ReadonlySet<ImplName> = new Set(
  IMPLEMENTATIONS.filter(
    (name) =>
      ![
        'agentfs-libsql-remote',
        'agentfs-turso',
        'agentfs-sdk-0.6.4',
        // Its changes reach another process only when a group commits.
        'agentfs-grouped',
      ].includes(name),
  ),
)

/** Opens one implementation in `dir` (or the storage already there). */
export async function openImpl(name: ImplName, dir: string): Promise<Impl> {
  const impl = await openOnly(name, dir)
  return SHAREABLE.has(name) ? { ...impl, share: { name, dir } } : impl
}

async function openOnly(name: ImplName, dir: string): Promise<Impl> {
  switch (name) {
    case 'raw-sql':
      return rawSql(dir, 'NORMAL')
    case 'raw-sql-full':
      return rawSql(dir, 'FULL')
    case 'raw-sql-kept':
      return rawSql(dir, 'NORMAL', true)
    case 'raw-sql-handles':
      return rawSql(dir, 'NORMAL', false, true)
    case 'agentfs':
      return agentfs(dir, 'NORMAL')
    case 'agentfs-noatime':
      return agentfs(dir, 'noatime')
    case 'agentfs-nofeed':
      return agentfs(dir, 'nofeed')
    case 'agentfs-grouped':
      return agentfs(dir, 'grouped')
    case 'agentfs-full':
      return agentfs(dir, 'FULL')
    case 'agentfs-libsql':
      return agentfs(dir, 'libsql')
    case 'agentfs-libsql-remote':
      return remote(dir)
    case 'agentfs-turso':
      return agentfs(dir, 'turso')
    case 'agentfs-sdk-0.6.4':
      return reference(dir)
    case 'node-fs':
      await mkdirHost(join(dir, 'tree'), { recursive: true })
      return nodeFs(dir)
  }
}

/**
 * The libSQL driver in remote mode: HTTP to the libSQL protocol test server, run in a process of
 * its own (its SQLite work must not share this event loop) on loopback. W13 (1 GiB through the
 * JSON protocol) is left out.
 */
async function remote(dir: string): Promise<Impl> {
  const path = join(dir, 'server.db')
  const server = spawn(
    process.execPath,
    [fileURLToPath(new URL('./hrana-child.js', import.meta.url)), path],
    {
      stdio: ['pipe', 'pipe', 'inherit'],
    },
  )
  const url = await new Promise<string>((resolve, reject) => {
    server.once('error', reject)
    server.once('exit', (code) => reject(new Error(`the test server exited (${code})`)))
    server.stdout!.once('data', (line: Buffer) => resolve(String(line).trim()))
  })
  const impl = await agentfs(dir, 'libsql', url)
  const { streamInOut: _stream, ...rest } = impl
  return {
    ...rest,
    name: 'agentfs-libsql-remote',
    durability: 'server: WAL, synchronous=NORMAL',
    files: dbFiles(path),
    roundTrips: async () =>
      ((await (await fetch(`${url}/stats`)).json()) as { pipelines: number }).pipelines,
    close: async () => {
      await impl.close()
      server.stdin!.end()
      await new Promise((resolve) => server.once('exit', resolve))
    },
  }
}
