import { checksum, type Impl, megabytes } from './impls.js'

export type Scale = 'small' | 'full'

/** Sizes of the workloads per scale (full = the sizes the targets are stated for). */
export const SIZES = {
  full: {
    files: 10_000,
    dirs: 100,
    bigMiB: 64,
    preads: 1000,
    kv: 10_000,
    tools: 10_000,
    renames: 1000,
    deepStats: 10_000,
    readdirPasses: 10,
    sourceFiles: 2000,
    agentOps: 1000,
    streamMiB: 1024,
    cloneFiles: 2000,
    packages: 100,
    concurrentReads: 5000,
  },
  small: {
    files: 1000,
    dirs: 20,
    bigMiB: 8,
    preads: 300,
    kv: 1000,
    tools: 1000,
    renames: 200,
    deepStats: 2000,
    readdirPasses: 3,
    sourceFiles: 300,
    agentOps: 200,
    streamMiB: 64,
    cloneFiles: 300,
    packages: 15,
    concurrentReads: 500,
  },
} as const

export interface WorkloadResult {
  readonly workload: string
  readonly title: string
  readonly ops: number
  readonly seconds: number
  readonly opsPerSec: number
  readonly mibPerSec?: number
  readonly p50us: number
  readonly p99us: number
  readonly diskBytes?: number
  /** Resident memory right after the workload. */
  readonly rssAfterMiB?: number
  /** The process's peak resident memory so far (this workload and those before it). */
  readonly peakAfterMiB?: number
  /** Round trips to the server per operation (remote implementations). */
  readonly roundTripsPerOp?: number
  /**
   * Workloads of two phases (W5 write/read, W7 set/get) report each phase's rate (MiB/s or
   * ops/s) too: each is compared with the baseline on its own, and the workload's ratio is the
   * geometric mean of its phases' ratios.
   */
  readonly parts?: Readonly<Record<string, number>>
}

/** The big file of W5, kept for W6 (one 64 MiB buffer, not one per workload). */
let bigFile: Buffer | undefined
const bigContent = (bytes: number) => {
  if (bigFile?.byteLength !== bytes) bigFile = content(5, bytes)
  return bigFile
}

/** Deterministic content so every read can be checked byte for byte. */
export function content(seed: number, size: number): Buffer {
  const out = Buffer.alloc(size)
  let x = (seed * 2654435761) >>> 0
  for (let i = 0; i < size; i++) {
    x = (x * 1103515245 + 12345) >>> 0
    out[i] = x >>> 24
  }
  return out
}

/** Times `count` calls of `op`, keeping each latency. */
async function timed(count: number, op: (i: number) => Promise<void>) {
  const lat = new Float64Array(count)
  const start = process.hrtime.bigint()
  for (let i = 0; i < count; i++) {
    const t0 = process.hrtime.bigint()
    await op(i)
    lat[i] = Number(process.hrtime.bigint() - t0) / 1000
  }
  const seconds = Number(process.hrtime.bigint() - start) / 1e9
  lat.sort()
  const pct = (p: number) => lat[Math.min(count - 1, Math.floor((count * p) / 100))] ?? 0
  return { ops: count, seconds, opsPerSec: count / seconds, p50us: pct(50), p99us: pct(99) }
}

function check(ok: boolean, what: string): void {
  if (!ok) throw new Error(`verification failed: ${what}`)
}

export interface Workload {
  readonly id: string
  readonly title: string
  /** Skipped (not applicable) when the implementation lacks what it needs. */
  readonly needs?: (impl: Impl) => boolean
  run(impl: Impl, scale: Scale): Promise<Omit<WorkloadResult, 'workload' | 'title'>>
}

const fileOf = (i: number, dirs: number) => `/bench/d${i % dirs}/f${i}.txt`

export const WORKLOADS: readonly Workload[] = [
  {
    id: 'W1',
    title: 'create 1 KiB files in directories',
    async run(impl, scale) {
      const s = SIZES[scale]
      await impl.mkdir('/bench')
      for (let d = 0; d < s.dirs; d++) await impl.mkdir(`/bench/d${d}`)
      return timed(s.files, (i) => impl.writeFile(fileOf(i, s.dirs), content(i, 1024)))
    },
  },
  {
    id: 'W2',
    title: 'read them back (verified)',
    async run(impl, scale) {
      const s = SIZES[scale]
      return timed(s.files, async (i) => {
        const data = await impl.readFile(fileOf(i, s.dirs))
        check(data.equals(content(i, 1024)), `W2 ${fileOf(i, s.dirs)}`)
      })
    },
  },
  {
    id: 'W3',
    title: 'stat them',
    async run(impl, scale) {
      const s = SIZES[scale]
      return timed(s.files, async (i) => {
        check((await impl.stat(fileOf(i, s.dirs))).size === 1024, 'W3 size')
      })
    },
  },
  {
    id: 'W4',
    title: 'readdir every directory',
    async run(impl, scale) {
      const s = SIZES[scale]
      const per = s.files / s.dirs
      return timed(s.dirs * s.readdirPasses, async (i) => {
        check((await impl.readdir(`/bench/d${i % s.dirs}`)).length === per, 'W4 entries')
      })
    },
  },
  {
    id: 'W5',
    title: 'write one big file, then read it whole',
    async run(impl, scale) {
      const bytes = SIZES[scale].bigMiB * 1024 * 1024
      const data = bigContent(bytes)
      const w = await timed(1, () => impl.writeFile('/big.bin', data))
      const r = await timed(1, async () => {
        check((await impl.readFile('/big.bin')).equals(data), 'W5 content')
      })
      const seconds = w.seconds + r.seconds
      return {
        ops: 2,
        seconds,
        opsPerSec: 2 / seconds,
        mibPerSec: (2 * bytes) / (1024 * 1024) / seconds,
        p50us: Math.min(w.p50us, r.p50us),
        p99us: Math.max(w.p99us, r.p99us),
        parts: { write: bytes / 2 ** 20 / w.seconds, read: bytes / 2 ** 20 / r.seconds },
      }
    },
  },
  {
    id: 'W6',
    title: 'open + unaligned 4 KiB pread + close',
    async run(impl, scale) {
      const s = SIZES[scale]
      const bytes = s.bigMiB * 1024 * 1024
      const data = bigContent(bytes)
      let x = 7
      const result = await timed(s.preads, async () => {
        x = (x * 48271) % 2147483647
        const offset = x % (bytes - 4096)
        const got = await impl.pread('/big.bin', offset, 4096)
        check(got.equals(data.subarray(offset, offset + 4096)), `W6 at ${offset}`)
      })
      bigFile = undefined
      return result
    },
  },
  {
    id: 'W7',
    title: 'kv set, then get',
    needs: (impl) => impl.kvSet !== undefined,
    async run(impl, scale) {
      const n = SIZES[scale].kv
      const set = await timed(n, (i) => impl.kvSet!(`key:${i}`, { i, name: `value ${i}` }))
      const get = await timed(n, async (i) => {
        const v = (await impl.kvGet!(`key:${i}`)) as { i: number }
        check(v.i === i, 'W7 value')
      })
      const seconds = set.seconds + get.seconds
      return {
        ops: 2 * n,
        seconds,
        opsPerSec: (2 * n) / seconds,
        p50us: (set.p50us + get.p50us) / 2,
        p99us: Math.max(set.p99us, get.p99us),
        parts: { set: set.opsPerSec, get: get.opsPerSec },
      }
    },
  },
  {
    id: 'W8',
    title: 'tool-call records',
    needs: (impl) => impl.toolRecord !== undefined,
    async run(impl, scale) {
      return timed(SIZES[scale].tools, (i) =>
        impl.toolRecord!('read_file', { path: `/src/f${i}.ts` }, { bytes: i }),
      )
    },
  },
  {
    id: 'W9',
    title: 'renames across directories',
    async run(impl, scale) {
      const s = SIZES[scale]
      return timed(s.renames, (i) =>
        impl.rename(fileOf(i, s.dirs), `/bench/d${(i + 1) % s.dirs}/moved-${i}.txt`),
      )
    },
  },
  {
    id: 'W10',
    title: 'stat a file 32 directories deep',
    async run(impl, scale) {
      let path = ''
      for (let d = 0; d < 32; d++) {
        path += `/deep${d}`
        await impl.mkdir(path)
      }
      path += '/leaf.txt'
      await impl.writeFile(path, content(10, 100))
      return timed(SIZES[scale].deepStats, async () => {
        check((await impl.stat(path)).size === 100, 'W10 size')
      })
    },
  },
  {
    id: 'W11',
    title: 'agent tools: read_file/edit_file/glob/grep',
    async run(impl, scale) {
      const s = SIZES[scale]
      // A source tree: 20 packages × (sourceFiles / 20) modules of ~2 KiB each.
      const per = s.sourceFiles / 20
      await impl.mkdir('/repo')
      for (let p = 0; p < 20; p++) {
        await impl.mkdir(`/repo/pkg${p}`)
        await impl.mkdir(`/repo/pkg${p}/src`)
        for (let m = 0; m < per; m++) await impl.writeFile(moduleOf(p, m), moduleSource(p, m))
      }
      const tools = impl.agentTools?.() ?? primitiveTools(impl)
      const call = async (name: string, input: unknown) => {
        const result = await tools.get(name)!.execute(input)
        check(result.isError !== true, `W11 ${name}: ${result.text.slice(0, 200)}`)
        return result.text
      }
      return timed(s.agentOps, async (i) => {
        const p = i % 20
        const m = Math.floor(i / 4) % per
        switch (i % 4) {
          case 0:
            check(
              (await call('read_file', { path: moduleOf(p, m) })).includes(`token_${p}_${m}`),
              'W11 read',
            )
            return
          case 1:
            await call('edit_file', {
              path: moduleOf(p, m),
              old_string: `token_${p}_${m} =`,
              new_string: `token_${p}_${m}_e${i} =`,
            })
            // The next edit of this module must find its token again.
            await call('edit_file', {
              path: moduleOf(p, m),
              old_string: `token_${p}_${m}_e${i} =`,
              new_string: `token_${p}_${m} =`,
            })
            return
          case 2:
            check(
              (await call('glob', { pattern: '**/*.ts', path: `/repo/pkg${p}` })).includes('.ts'),
              'W11 glob',
            )
            return
          default:
            check(
              (
                await call('grep', { pattern: `token_${p}_${m}\\b`, path: `/repo/pkg${p}` })
              ).includes(`mod${m}.ts`),
              'W11 grep',
            )
        }
      })
    },
  },
]

/** W13: the memory check: a large file streamed in and out must not grow RSS with its size. */
export const STREAM: Workload = {
  id: 'W13',
  title: 'stream a large file in and out',
  needs: (impl) => impl.streamInOut !== undefined,
  async run(impl, scale) {
    const mib = SIZES[scale].streamMiB
    let expected = 0
    for await (const chunk of megabytes(mib)) expected = checksum(expected, chunk as Buffer)
    const r = await timed(1, async () => {
      check((await impl.streamInOut!('/stream.bin', mib)) === expected, 'W13 checksum')
    })
    return { ...r, ops: 2, opsPerSec: 2 / r.seconds, mibPerSec: (2 * mib) / r.seconds }
  },
}

/**
 * What the four tools of W11 do, on an implementation's primitives, for storage no agent tool
 * serves (plain spec SQL): the same reads, writes and listings, no validation or audit.
 */
function primitiveTools(impl: Impl): Map<string, { execute(input: unknown): Promise<ToolText> }> {
  const walk = async (dir: string, out: string[]) => {
    for (const name of await impl.readdir(dir)) {
      const path = `${dir}/${name}`
      // A directory lists; a file does not (the primitives have no file type).
      const below = await impl.readdir(path).catch(() => undefined)
      if (below === undefined) out.push(path)
      else await walk(path, out)
    }
    return out
  }
  const tool = <I>(execute: (input: I) => Promise<string>) => ({
    execute: async (input: unknown): Promise<ToolText> => ({ text: await execute(input as I) }),
  })
  return new Map([
    ['read_file', tool(async (i: { path: string }) => String(await impl.readFile(i.path)))],
    [
      'edit_file',
      tool(async (i: { path: string; old_string: string; new_string: string }) => {
        const text = String(await impl.readFile(i.path))
        if (!text.includes(i.old_string)) throw new Error(`W11 edit: no ${i.old_string}`)
        await impl.writeFile(i.path, Buffer.from(text.replace(i.old_string, i.new_string)))
        return 'edited'
      }),
    ],
    [
      'glob',
      tool(async (i: { path: string }) =>
        (await walk(i.path, [])).filter((p) => p.endsWith('.ts')).join('\n'),
      ),
    ],
    [
      'grep',
      tool(async (i: { pattern: string; path: string }) => {
        const re = new RegExp(i.pattern)
        const hits: string[] = []
        for (const path of await walk(i.path, []))
          if (re.test(String(await impl.readFile(path)))) hits.push(path)
        return hits.join('\n')
      }),
    ],
  ])
}

interface ToolText {
  readonly isError?: boolean
  readonly text: string
}

const moduleOf = (p: number, m: number) => `/repo/pkg${p}/src/mod${m}.ts`
function moduleSource(p: number, m: number): Buffer {
  const lines = [`// package ${p}, module ${m}`, `export const token_${p}_${m} = ${m}`]
  for (let k = 0; lines.join('\n').length < 2048; k++)
    lines.push(`export function f${k}(x: number): number {`, `  return x * ${k} + ${m}`, '}')
  return Buffer.from(`${lines.join('\n')}\n`)
}
