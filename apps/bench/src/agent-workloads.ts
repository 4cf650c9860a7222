// The workloads agents run beyond the ten primitives: an import of a source tree as `git clone`
// writes it, an `npm install`-like tree created and deleted, and readers in other processes
// while this one writes. Each runs on every implementation that can, so each has a raw SQL and a
// node:fs row to compare with.
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import type { Impl } from './impls.js'
import { type Scale, SIZES, type Workload, type WorkloadResult } from './workloads.js'

type Result = Omit<WorkloadResult, 'workload' | 'title'>

function check(ok: boolean, what: string): void {
  if (!ok) throw new Error(`verification failed: ${what}`)
}

/** Bytes of a file of `size` that say which file they belong to (sources compress like code). */
function fileBytes(seed: number, size: number): Buffer {
  const line = Buffer.from(`// file ${seed}: export const v${seed} = ${seed * 7919};\n`)
  const out = Buffer.allocUnsafe(size)
  for (let at = 0; at < size; at += line.byteLength) line.copy(out, at, 0, size - at)
  return out
}

/** A size between 200 B and 16 KiB, skewed small as source trees are. */
const sizeOf = (i: number) => 200 + (((i * 2654435761) >>> 0) % (((i % 7) + 1) * 2300))

/** Runs `body` once, timed, as a workload of `ops` operations with named phases. */
async function phases(ops: number, body: Record<string, () => Promise<number>>): Promise<Result> {
  const parts: Record<string, number> = {}
  let seconds = 0
  for (const [name, run] of Object.entries(body)) {
    const start = process.hrtime.bigint()
    const count = await run()
    const took = Number(process.hrtime.bigint() - start) / 1e9
    seconds += took
    parts[name] = count / took
  }
  return { ops, seconds, opsPerSec: ops / seconds, p50us: 0, p99us: 0, parts }
}

/** W14's tree: `dirs` directories two levels deep, files spread over them. */
function cloneTree(scale: Scale) {
  const files = SIZES[scale].cloneFiles
  const top = 20
  const perTop = 5
  const dirOf = (i: number) => `/clone/m${i % top}/s${Math.floor(i / top) % perTop}`
  return { files, top, perTop, dirOf, fileOf: (i: number) => `${dirOf(i)}/file${i}.ts` }
}

/** W15's tree: packages of a few directories and files each, as a package manager lays out. */
function packageTree(scale: Scale) {
  const packages = SIZES[scale].packages
  const files: string[] = []
  const dirs: string[] = ['/node_modules']
  for (let p = 0; p < packages; p++) {
    const root = `/node_modules/pkg-${p}`
    dirs.push(root, `${root}/lib`, `${root}/dist`, `${root}/dist/esm`)
    files.push(`${root}/package.json`, `${root}/README.md`, `${root}/LICENSE`)
    for (let f = 0; f < 8; f++) files.push(`${root}/lib/m${f}.js`, `${root}/dist/esm/m${f}.mjs`)
  }
  return { files, dirs }
}

/** One reader process: opens the implementation's storage, reads files until told its count. */
async function readers(impl: Impl, count: number, scale: Scale): Promise<Result> {
  const share = impl.share!
  const s = SIZES[scale]
  const each = s.concurrentReads
  const script = fileURLToPath(new URL('./reader-child.js', import.meta.url))
  // Files W1 wrote and W9 left in place.
  const args = [share.name, share.dir, ...[each, s.renames, s.files, s.dirs].map(String)]
  const children = Array.from({ length: count }, (_, k) =>
    spawn(process.execPath, [script, ...args, String(k)], { stdio: ['pipe', 'pipe', 'inherit'] }),
  )
  const lines = children.map((child) => {
    const out: string[] = []
    child.stdout!.setEncoding('utf8').on('data', (text: string) => out.push(text))
    return {
      ready: new Promise<void>((resolve, reject) => {
        child.stdout!.on('data', () => {
          if (out.join('').includes('ready\n')) resolve()
        })
        child.once('exit', (code) => reject(new Error(`a reader exited early (${code})`)))
      }),
      done: new Promise<{ ops: number; seconds: number }>((resolve, reject) => {
        child.once('exit', (code) => {
          if (code !== 0) return reject(new Error(`a reader failed (${code})`))
          const last = out.join('').trim().split('\n').pop()!
          resolve(JSON.parse(last) as { ops: number; seconds: number })
        })
      }),
    }
  })
  const timeout = setTimeout(() => {
    for (const child of children) child.kill('SIGKILL')
  }, 300_000)
  try {
    await Promise.all(lines.map((l) => l.ready))
    await impl.mkdir('/concurrent').catch(() => undefined)
    const start = process.hrtime.bigint()
    for (const child of children) child.stdin!.end('go\n')
    let finished = false
    const all = Promise.all(lines.map((l) => l.done)).finally(() => {
      finished = true
    })
    let writes = 0
    while (!finished) {
      await impl.writeFile(`/concurrent/f${writes % 100}`, fileBytes(writes, 1024))
      writes++
      // Let the event loop turn (pipes, exits): a synchronous writer would otherwise starve it.
      await new Promise(setImmediate)
    }
    const seconds = Number(process.hrtime.bigint() - start) / 1e9
    const results = await all
    const reads = results.reduce((sum, r) => sum + r.ops, 0)
    const readSeconds = Math.max(...results.map((r) => r.seconds))
    return {
      ops: reads + writes,
      seconds,
      opsPerSec: reads / readSeconds,
      p50us: 0,
      p99us: 0,
      parts: { reads: reads / readSeconds, writes: writes / seconds },
    }
  } finally {
    clearTimeout(timeout)
  }
}

export const AGENT_WORKLOADS: readonly Workload[] = [
  {
    id: 'W14',
    title: 'git clone-like import of a source tree',
    async run(impl, scale) {
      const t = cloneTree(scale)
      const result = await phases(t.files, {
        import: async () => {
          await impl.mkdir('/clone')
          for (let m = 0; m < t.top; m++) {
            await impl.mkdir(`/clone/m${m}`)
            for (let d = 0; d < t.perTop; d++) await impl.mkdir(`/clone/m${m}/s${d}`)
          }
          for (let i = 0; i < t.files; i++)
            await impl.writeFile(t.fileOf(i), fileBytes(i, sizeOf(i)))
          return t.files
        },
      })
      for (let i = 0; i < t.files; i += 97)
        check((await impl.stat(t.fileOf(i))).size === sizeOf(i), `W14 ${t.fileOf(i)}`)
      return result
    },
  },
  {
    id: 'W15',
    title: 'npm install-like tree: create, then delete',
    needs: (impl) => impl.rmTree !== undefined,
    async run(impl, scale) {
      const t = packageTree(scale)
      const result = await phases(t.files.length * 2, {
        create: async () => {
          for (const dir of t.dirs) await impl.mkdir(dir)
          for (let i = 0; i < t.files.length; i++)
            await impl.writeFile(t.files[i]!, fileBytes(i, 300 + (i % 13) * 250))
          return t.files.length
        },
        delete: async () => {
          await impl.rmTree!('/node_modules')
          return t.files.length
        },
      })
      check(!(await impl.readdir('/')).includes('node_modules'), 'W15 removed')
      return result
    },
  },
  {
    id: 'W16',
    title: 'readers in 2 other processes during a writer',
    needs: (impl) => impl.share !== undefined,
    run: (impl, scale) => readers(impl, 2, scale),
  },
  {
    id: 'W17',
    title: 'readers in 4 other processes during a writer',
    needs: (impl) => impl.share !== undefined,
    run: (impl, scale) => readers(impl, 4, scale),
  },
]
