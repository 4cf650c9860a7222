import { existsSync, readdirSync } from 'node:fs'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { nodeSqliteProblem } from '@agentfs/driver-node-sqlite'
import { afterAll, describe, expect, test } from 'vitest'

// Doc-tests: every ```ts block in every README runs as written, so the quick starts cannot rot.
// A block that cannot run alone (it needs a model, an API key or a project directory, or is a
// sketch) is marked `<!-- doctest: skip (reason) -->` on the line before it.

const repo = fileURLToPath(new URL('../../../', import.meta.url))
const READMES = [
  'README.md',
  // Every package's README: a new package's quick start is tested from its first commit.
  ...readdirSync(join(repo, 'packages'))
    .filter((p) => existsSync(join(repo, 'packages', p, 'README.md')))
    .sort()
    .map((p) => `packages/${p}/README.md`),
  'apps/cli/README.md',
  'conformance/README.md',
]

interface Block {
  readonly readme: string
  readonly index: number
  readonly code: string
  readonly skip: string | undefined
}

async function blocks(): Promise<Block[]> {
  const out: Block[] = []
  for (const readme of READMES) {
    const text = await readFile(join(repo, readme), 'utf8')
    let index = 0
    for (const match of text.matchAll(
      /(?:<!-- doctest: skip \(([^)]*)\) -->\n)?```ts\n([\s\S]*?)```/g,
    ))
      out.push({ readme, index: index++, code: match[2]!, skip: match[1] })
  }
  return out
}

const all = await blocks()
const here = fileURLToPath(new URL('.', import.meta.url))
const scratch = join(here, '..', '.doctest')
const cwd = await mkdtemp(join(tmpdir(), 'agentfs-doctest-'))
const home = process.cwd()

afterAll(async () => {
  process.chdir(home)
  await rm(scratch, { recursive: true, force: true })
  await rm(cwd, { recursive: true, force: true })
})

describe('README code blocks run as written', () => {
  test('every README has its blocks found, and every skip gives a reason', () => {
    expect(all.length).toBeGreaterThanOrEqual(15)
    for (const block of all.filter((b) => b.skip !== undefined))
      expect(block.skip!.length, `${block.readme} #${block.index}`).toBeGreaterThan(5)
  })

  // Blocks on node:sqlite need Node.js 22.16 (.ci/run's Node 24 leg runs them).
  const nodeSqlite = nodeSqliteProblem()
  for (const block of all) {
    const name = `${block.readme} #${block.index}${nodeSqlite && block.code.includes('@agentfs/driver-node-sqlite') ? ` (skipped: ${nodeSqlite})` : ''}`
    test.skipIf(
      block.skip !== undefined ||
        (nodeSqlite !== undefined && block.code.includes('@agentfs/driver-node-sqlite')),
    )(
      name,
      async () => {
        await mkdir(scratch, { recursive: true })
        const file = join(scratch, `${block.readme.replace(/\W+/g, '-')}-${block.index}.ts`)
        await writeFile(file, `${block.code}\nexport {}\n`)
        // Each block runs in a fresh folder of its own (it may create agent.db, .agentfs/…).
        const dir = join(cwd, relative(repo, file).replace(/\W+/g, '-'))
        await mkdir(dir, { recursive: true })
        process.chdir(dir)
        try {
          await import(file)
        } finally {
          process.chdir(home)
        }
      },
      60_000,
    )
  }
})
