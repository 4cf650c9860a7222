import { spawnSync } from 'node:child_process'
import * as nodeFs from 'node:fs/promises'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { isDeepStrictEqual } from 'node:util'
import fc from 'fast-check'
import { expect } from 'vitest'

/** The part of a filesystem the differential test drives (node:fs/promises has it too). */
export interface DifferentialFs {
  writeFile(path: string, data: string | Uint8Array): Promise<void>
  appendFile(path: string, data: string | Uint8Array): Promise<void>
  mkdir(path: string, options: { recursive: boolean }): Promise<string | undefined>
  rmdir(path: string): Promise<void>
  unlink(path: string): Promise<void>
  readFile(path: string): Promise<Uint8Array>
  stat(path: string): Promise<DifferentialStats>
  lstat(path: string): Promise<DifferentialStats>
  readdir(path: string): Promise<string[]>
  readlink(path: string): Promise<string>
  rm(path: string, options: { recursive: boolean; force: boolean }): Promise<void>
  rename(from: string, to: string): Promise<void>
  link(from: string, to: string): Promise<void>
  copyFile(from: string, to: string): Promise<void>
  symlink(target: string, path: string): Promise<void>
  truncate(path: string, length: number): Promise<void>
}

interface DifferentialStats {
  mode: number
  size: number
  nlink: number
  isFile(): boolean
  isDirectory(): boolean
  isSymbolicLink(): boolean
}

/** A starting tree: file contents (string), `{ dir: true }` or `{ symlink: target }` by path. */
export type InitialTree = Record<string, string | { dir: true } | { symlink: string }>

/** Options of {@link runDifferential}. */
export interface DifferentialOptions {
  /** Random sequences to run (CI: `runs × opsPerRun` ≥ 10,000). */
  readonly runs: number
  readonly opsPerRun: number
  readonly seed?: number
  /** Shrink a failure to a minimal sequence (slow); off by default. */
  readonly shrink?: boolean
  /** What both sides start with. */
  readonly initialTree?: InitialTree
  /** Creates the filesystem under test showing `initialTree`; `close` releases it. */
  readonly create: (
    tree: InitialTree,
  ) => Promise<{ fs: DifferentialFs; close(): Promise<void>; history?: DifferentialHistory }>
  /**
   * Interleave snapshots and restores (the subject's `history` must exist): node:fs keeps a
   * copy of its directory per snapshot (`cp -a`, hard links kept) and restores by copying back.
   */
  readonly history?: boolean
  /** fast-check's size of generated values (contents, …): default `small`. */
  readonly baseSize?: 'small' | 'medium' | 'large'
}

/** Snapshots and restores of the filesystem under test. */
export interface DifferentialHistory {
  snapshot(name: string): Promise<void>
  restore(name: string): Promise<void>
}

const names = ['a', 'b', 'c']
const pathArb = fc
  .array(fc.constantFrom(...names), { minLength: 1, maxLength: 3 })
  .map((parts) => `/${parts.join('/')}`)
const contentArb = fc.oneof(
  fc.constant(''),
  fc.string({ maxLength: 20 }),
  fc.uint8Array({ maxLength: 300 }),
)
// Downward relative targets only: `..` or `/` in a target would leave node's sandbox directory,
// where the filesystem under test stays at its root. Links with `..` belong in unit tests.
const targetArb = fc
  .array(fc.constantFrom(...names), { minLength: 1, maxLength: 3 })
  .map((p) => p.join('/'))

/** One generated operation. */
export type DifferentialOp =
  | { op: 'writeFile' | 'appendFile'; path: string; data: string | Uint8Array }
  | { op: 'mkdir'; path: string; recursive: boolean }
  | {
      op: 'rmdir' | 'unlink' | 'readFile' | 'stat' | 'lstat' | 'readdir' | 'readlink'
      path: string
    }
  | { op: 'rm'; path: string; recursive: boolean; force: boolean }
  | { op: 'rename' | 'link' | 'copyFile'; path: string; to: string }
  | { op: 'symlink'; target: string; path: string }
  | { op: 'truncate'; path: string; length: number }
  | { op: 'snapshot' }
  | { op: 'restore'; which: number }

const opArb: fc.Arbitrary<DifferentialOp> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant('writeFile' as const),
      path: pathArb,
      data: contentArb,
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('appendFile' as const),
      path: pathArb,
      data: contentArb,
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant('mkdir' as const),
      path: pathArb,
      recursive: fc.boolean(),
    }),
  },
  {
    weight: 6,
    arbitrary: fc.record({
      op: fc.constantFrom(
        'rmdir' as const,
        'unlink' as const,
        'readFile' as const,
        'stat' as const,
        'lstat' as const,
        'readdir' as const,
        'readlink' as const,
      ),
      path: pathArb,
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('rm' as const),
      path: pathArb,
      recursive: fc.boolean(),
      force: fc.boolean(),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constantFrom('rename' as const, 'link' as const, 'copyFile' as const),
      path: pathArb,
      to: pathArb,
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ op: fc.constant('symlink' as const), target: targetArb, path: pathArb }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('truncate' as const),
      path: pathArb,
      length: fc.nat({ max: 400 }),
    }),
  },
)

const historyArb: fc.Arbitrary<DifferentialOp> = fc.oneof(
  { weight: 1, arbitrary: fc.constant({ op: 'snapshot' as const }) },
  {
    weight: 1,
    arbitrary: fc.record({ op: fc.constant('restore' as const), which: fc.nat({ max: 20 }) }),
  },
)
const opWithHistoryArb: fc.Arbitrary<DifferentialOp> = fc.oneof(
  { weight: 30, arbitrary: opArb },
  { weight: 3, arbitrary: historyArb },
  // Files of several chunks, so restores must bring whole contents back.
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constantFrom('writeFile' as const, 'appendFile' as const),
      path: pathArb,
      data: fc.uint8Array({ minLength: 65, maxLength: 600 }),
    }),
  },
)

/** Runs a snapshot or restore on both sides (node: copies of the directory, kept in `copies`). */
async function applyHistory(
  op: Extract<DifferentialOp, { op: 'snapshot' | 'restore' }>,
  dir: string,
  copies: string[],
  history: DifferentialHistory,
): Promise<void> {
  const copy = (from: string, to: string) => {
    const result = spawnSync('cp', ['-a', `${from}/.`, to])
    if (result.status !== 0) throw new Error(`cp -a failed: ${result.stderr}`)
  }
  if (op.op === 'snapshot') {
    const name = `s${copies.length}`
    const saved = `${dir}.${name}`
    await nodeFs.mkdir(saved)
    copy(dir, saved)
    copies.push(saved)
    await history.snapshot(name)
    return
  }
  if (copies.length === 0) return
  const index = op.which % copies.length
  for (const entry of await nodeFs.readdir(dir))
    await nodeFs.rm(join(dir, entry), { recursive: true, force: true })
  copy(copies[index]!, dir)
  await history.restore(`s${index}`)
}

const normalizeCode = (code: string) => (code === 'ERR_FS_EISDIR' ? 'EISDIR' : code)

async function outcome(fn: () => Promise<unknown>): Promise<unknown> {
  try {
    const value = await fn()
    if (value && typeof value === 'object' && 'isFile' in value) {
      const s = value as DifferentialStats
      return {
        mode: s.mode,
        size: s.isFile() || s.isSymbolicLink() ? s.size : undefined,
        nlink: s.isFile() ? s.nlink : undefined,
      }
    }
    if (Array.isArray(value)) return [...value].sort()
    if (value instanceof Uint8Array) return Buffer.from(value).toString('hex')
    return value ?? null
  } catch (error) {
    return { error: normalizeCode((error as { code?: string }).code ?? String(error)) }
  }
}

function apply(fs: DifferentialFs, base: string, op: DifferentialOp): Promise<unknown> {
  const p = (path: string) => (base === '' ? path : join(base, path))
  switch (op.op) {
    case 'writeFile':
      return outcome(() => fs.writeFile(p(op.path), op.data))
    case 'appendFile':
      return outcome(() => fs.appendFile(p(op.path), op.data))
    case 'mkdir':
      return outcome(async () => {
        const result = await fs.mkdir(p(op.path), { recursive: op.recursive })
        return result === undefined ? null : result.slice(base.length)
      })
    case 'rmdir':
      return outcome(() => fs.rmdir(p(op.path)))
    case 'unlink':
      return outcome(() => fs.unlink(p(op.path)))
    case 'readFile':
      return outcome(() => fs.readFile(p(op.path)))
    case 'stat':
      return outcome(() => fs.stat(p(op.path)))
    case 'lstat':
      return outcome(() => fs.lstat(p(op.path)))
    case 'readdir':
      return outcome(() => fs.readdir(p(op.path)))
    case 'readlink':
      return outcome(() => fs.readlink(p(op.path)))
    case 'rm':
      return outcome(() => fs.rm(p(op.path), { recursive: op.recursive, force: op.force }))
    case 'rename':
      return outcome(() => fs.rename(p(op.path), p(op.to)))
    case 'link':
      return outcome(() => fs.link(p(op.path), p(op.to)))
    case 'copyFile':
      return outcome(() => fs.copyFile(p(op.path), p(op.to)))
    case 'symlink':
      return outcome(() => fs.symlink(op.target, p(op.path)))
    case 'truncate':
      return outcome(() => fs.truncate(p(op.path), op.length))
    case 'snapshot':
    case 'restore':
      throw new Error(`${op.op} runs through applyHistory`)
  }
}

/** Everything visible: every path with its type, mode, size, link count and bytes or target. */
export async function snapshotTree(fs: DifferentialFs, base: string): Promise<string[]> {
  const out: string[] = []
  const walk = async (dir: string, rel: string) => {
    const entries = await fs.readdir(base === '' ? dir : join(base, dir))
    for (const name of [...entries].sort()) {
      const path = rel === '' ? `/${name}` : `${rel}/${name}`
      const full = base === '' ? path : join(base, path)
      const s = await fs.lstat(full)
      if (s.isDirectory()) {
        out.push(`${path} dir ${(s.mode & 0o7777).toString(8)}`)
        await walk(path, path)
      } else if (s.isSymbolicLink()) {
        out.push(`${path} link -> ${await fs.readlink(full)}`)
      } else {
        const bytes = Buffer.from(await fs.readFile(full)).toString('hex')
        out.push(
          `${path} file ${(s.mode & 0o7777).toString(8)} size=${s.size} nlink=${s.nlink} ${bytes}`,
        )
      }
    }
  }
  await walk('/', '')
  return out
}

/** Writes an initial tree into a node:fs directory. */
export async function writeTree(dir: string, tree: InitialTree): Promise<void> {
  for (const [path, entry] of Object.entries(tree).sort(([a], [b]) => (a < b ? -1 : 1))) {
    const full = join(dir, path)
    if (typeof entry === 'string') await nodeFs.writeFile(full, entry)
    else if ('dir' in entry) await nodeFs.mkdir(full, { recursive: true })
    else await nodeFs.symlink(entry.symlink, full)
  }
}

/**
 * libuv's copyfile deletes an existing destination when the source is a directory (through a
 * dangling link it even creates the target, then removes the link): data loss an AgentFS
 * filesystem does not copy. It refuses with EISDIR and changes nothing. Such steps are skipped.
 */
async function libuvDeletesDestination(dir: string, from: string, to: string): Promise<boolean> {
  const source = await nodeFs.stat(join(dir, from)).catch(() => undefined)
  const target = await nodeFs.lstat(join(dir, to)).catch(() => undefined)
  return source?.isDirectory() === true && target !== undefined
}

/**
 * Differential test: random operation sequences run on the filesystem under test and on
 * node:fs in a temporary directory; after every step the results (value or error code) and the
 * whole visible state must agree. Call inside a vitest test.
 */
export async function runDifferential(options: DifferentialOptions): Promise<void> {
  const tree = options.initialTree ?? {}
  await fc.assert(
    fc.asyncProperty(
      fc.array(options.history ? opWithHistoryArb : opArb, {
        minLength: options.opsPerRun,
        maxLength: options.opsPerRun,
      }),
      async (ops) => {
        const dir = await mkdtemp(join(tmpdir(), 'agentfs-diff-'))
        await writeTree(dir, tree)
        const subject = await options.create(tree)
        const copies: string[] = []
        const nodeTree = () => snapshotTree(nodeFs as unknown as DifferentialFs, dir)
        // The node:fs tree after the last step: the state the next step starts from (walked
        // once per step, not again for the failure message).
        let state = await nodeTree()
        try {
          for (let i = 0; i < ops.length; i++) {
            const op = ops[i]!
            if (op.op === 'snapshot' || op.op === 'restore') {
              if (!subject.history)
                throw new Error('history: true needs create() to return history')
              await applyHistory(op, dir, copies, subject.history)
              state = await nodeTree()
              expect(
                await snapshotTree(subject.fs, ''),
                `state after step ${i}: ${JSON.stringify(op)}`,
              ).toEqual(state)
              continue
            }
            if (op.op === 'copyFile' && (await libuvDeletesDestination(dir, op.path, op.to)))
              continue
            const before = state
            const expected = await apply(nodeFs as unknown as DifferentialFs, dir, op)
            const actual = await apply(subject.fs, '', op)
            if (!isDeepStrictEqual(actual, expected))
              expect(
                actual,
                `step ${i}: ${JSON.stringify(op)} on tree:\n${before.join('\n')}\n`,
              ).toEqual(expected)
            state = await nodeTree()
            expect(
              await snapshotTree(subject.fs, ''),
              `state after step ${i}: ${JSON.stringify(op)}`,
            ).toEqual(state)
          }
        } finally {
          await subject.close()
          await rm(dir, { recursive: true, force: true })
          for (const copy of copies) await rm(copy, { recursive: true, force: true })
        }
      },
    ),
    {
      numRuns: options.runs,
      ...(options.baseSize === undefined ? {} : { baseSize: options.baseSize }),
      ...(options.seed === undefined ? {} : { seed: options.seed }),
      endOnFailure: !options.shrink,
    },
  )
}
