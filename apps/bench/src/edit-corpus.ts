// The edit-success corpus: edit requests made from real source files (the project's own), each
// with one drift a model's text and a file commonly disagree by, sent to `edit_file` and to an
// exact-match baseline (the tool as it was: old_string must occur once, byte for byte). An edit
// succeeds when the file becomes exactly the intended file; a wrong edit is any other change.
// Controls carry a real content difference and must be refused.
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { createAgentTools } from '@agentfs/agent-tools'
import { fixedClock } from '@agentfs/core'
import { AgentFS } from '@agentfs/sdk'

/** What differs between the file and the text the model sends. */
export const DRIFTS = [
  'none',
  'file-crlf',
  'file-trailing-whitespace',
  'file-tabs',
  'file-curly-quotes',
  'file-dashes-nbsp',
  'model-line-numbers',
  'model-trailing-whitespace',
  'model-tabs',
  'file-crlf-tabs-quotes',
  'control-content-difference',
  'control-drift-and-difference',
] as const
export type Drift = (typeof DRIFTS)[number]

export interface EditCase {
  readonly drift: Drift
  readonly source: string
  /** The file as stored, the request, and the file intended after it (undefined: refuse). */
  readonly file: string
  readonly oldString: string
  readonly newString: string
  readonly expected: string | undefined
}

export type Outcome = 'success' | 'refused' | 'wrong'

/** A small deterministic generator (mulberry32). */
function rng(seed: number) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** The `.ts` sources under `packages/*\/src` of the repository at `root`. */
export function sourceFiles(root: string): string[] {
  const out: string[] = []
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const full = join(dir, name)
      if (statSync(full).isDirectory()) walk(full)
      else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) out.push(full)
    }
  }
  for (const pkg of readdirSync(join(root, 'packages')).sort()) {
    const src = join(root, 'packages', pkg, 'src')
    try {
      if (statSync(src).isDirectory()) walk(src)
    } catch {}
  }
  return out
}

const count = (text: string, needle: string) => text.split(needle).length - 1
const tabify = (text: string) => text.replace(/^((?: {2})+)/gm, (m) => '\t'.repeat(m.length / 2))
const CURLY: Record<string, string> = { "'": '\u2019', '"': '\u201d' }

/**
 * Makes the cases of one drift from the sources: a region of 2–5 lines occurring once, and the
 * request "insert a line after its first line" (the new line indented as that line).
 */
export function makeCases(
  sources: ReadonlyArray<{ name: string; text: string }>,
  drift: Drift,
  perDrift: number,
  seed: number,
): EditCase[] {
  const random = rng(seed)
  const cases: EditCase[] = []
  for (let attempt = 0; cases.length < perDrift && attempt < perDrift * 50; attempt++) {
    const src = sources[Math.floor(random() * sources.length)]!
    const lines = src.text.split('\n')
    const span = 2 + Math.floor(random() * 4)
    const at = Math.floor(random() * Math.max(1, lines.length - span - 1))
    const region = lines.slice(at, at + span)
    if (region.some((l) => l.trim() === '') || region.join('\n').length < 30) continue
    if (!/^\s/.test(region[0]!) || region.some((l) => l.includes('\t'))) continue
    const old = region.join('\n')
    if (count(src.text, old) !== 1) continue
    const indent = /^\s*/.exec(region[0]!)![0]
    const added = `${indent}void 0 // edited ${cases.length}`
    const cleanNew = [region[0], added, ...region.slice(1)].join('\n')
    const cleanAfter = src.text.replace(old, () => cleanNew)
    let file = src.text
    let expected: string | undefined = cleanAfter
    let oldString = old
    let newString = cleanNew
    const onRegion = (fn: (s: string) => string) => {
      file = src.text.replace(old, () => fn(old))
      expected = cleanAfter.replace(cleanNew, () =>
        [fn(region[0]!), added, fn(region.slice(1).join('\n'))].join('\n'),
      )
    }
    switch (drift) {
      case 'none':
        break
      case 'file-crlf':
        file = src.text.replace(/\n/g, '\r\n')
        expected = cleanAfter.replace(/\n/g, '\r\n')
        break
      case 'file-trailing-whitespace':
        onRegion((s) => s.replace(/$/gm, '  '))
        break
      case 'file-tabs':
        file = tabify(src.text)
        expected = tabify(cleanAfter)
        break
      case 'file-curly-quotes':
        if (!/['"]/.test(old)) continue
        onRegion((s) => s.replace(/['"]/g, (q) => CURLY[q]!))
        break
      case 'file-dashes-nbsp': {
        if (!/ - | = /.test(old)) continue
        onRegion((s) => s.replace(/ - /g, ' \u2013 ').replace(/ = /g, '\u00a0=\u00a0'))
        break
      }
      case 'model-line-numbers': {
        const prefix = (l: string, i: number) => `${String(at + 1 + i).padStart(6)}\t${l}`
        oldString = region.map(prefix).join('\n')
        newString = [
          prefix(region[0]!, 0),
          added,
          ...region.slice(1).map((l, i) => prefix(l, i + 1)),
        ].join('\n')
        break
      }
      case 'model-trailing-whitespace':
        oldString = old.replace(/$/gm, ' ')
        newString = cleanNew.replace(/$/gm, ' ')
        // Kept lines stay the file's; the added line is as the model typed it.
        expected = cleanAfter.replace(cleanNew, () =>
          [region[0], `${added} `, ...region.slice(1)].join('\n'),
        )
        break
      case 'model-tabs':
        oldString = tabify(old)
        newString = tabify(cleanNew)
        break
      case 'file-crlf-tabs-quotes': {
        if (!/['"]/.test(old)) continue
        const curl = (t: string) => t.replace(old, () => old.replace(/['"]/g, (q) => CURLY[q]!))
        const curlAfter = (t: string) =>
          t.replace(cleanNew, () =>
            [
              region[0]!.replace(/['"]/g, (q) => CURLY[q]!),
              added,
              region
                .slice(1)
                .join('\n')
                .replace(/['"]/g, (q) => CURLY[q]!),
            ].join('\n'),
          )
        file = tabify(curl(src.text)).replace(/\n/g, '\r\n')
        expected = tabify(curlAfter(cleanAfter)).replace(/\n/g, '\r\n')
        break
      }
      case 'control-drift-and-difference':
      case 'control-content-difference': {
        // One character of a non-blank line changed: a real difference, never to be matched.
        const k = Math.floor(random() * region.length)
        const line = region[k]!
        const pos = line.search(/[A-Za-z0-9]/)
        if (pos === -1) continue
        const ch = line[pos] === 'x' ? 'y' : 'x'
        const changed = region.map((l, i) =>
          i === k ? l.slice(0, pos) + ch + l.slice(pos + 1) : l,
        )
        oldString = changed.join('\n')
        newString = [changed[0], added, ...changed.slice(1)].join('\n')
        if (count(src.text, oldString) > 0) continue
        if (drift === 'control-drift-and-difference') file = tabify(src.text).replace(/\n/g, '\r\n')
        expected = undefined
        break
      }
    }
    cases.push({ drift, source: src.name, file, oldString, newString, expected })
  }
  return cases
}

/** The baseline: the exact-match edit (the text must occur once, byte for byte). */
export function exactEdit(file: string, old: string, replacement: string): string | undefined {
  if (old === '' || count(file, old) !== 1) return undefined
  return file.replace(old, () => replacement)
}

export interface CorpusResult {
  readonly byDrift: Record<
    string,
    { cases: number; before: Record<Outcome, number>; after: Record<Outcome, number> }
  >
  readonly wrongAfter: EditCase[]
}

const outcome = (c: EditCase, result: string | undefined): Outcome =>
  result === undefined || result === c.file
    ? c.expected === undefined
      ? 'success'
      : 'refused'
    : result === c.expected
      ? 'success'
      : 'wrong'

/** Runs every case through the baseline and through `edit_file` on an AgentFS. */
export async function runCorpus(cases: readonly EditCase[]): Promise<CorpusResult> {
  const agent = await AgentFS.open({ path: ':memory:', clock: fixedClock() })
  try {
    const edit = createAgentTools({ fs: agent.fs, include: ['edit_file'] }).get('edit_file')!
    const byDrift: CorpusResult['byDrift'] = {}
    const wrongAfter: EditCase[] = []
    const zero = (): Record<Outcome, number> => ({ success: 0, refused: 0, wrong: 0 })
    for (const c of cases) {
      byDrift[c.drift] ??= { cases: 0, before: zero(), after: zero() }
      const row = byDrift[c.drift]!
      row.cases++
      row.before[outcome(c, exactEdit(c.file, c.oldString, c.newString))]++
      await agent.fs.writeFile('/f.ts', c.file)
      await edit.execute({ path: '/f.ts', old_string: c.oldString, new_string: c.newString })
      const after = outcome(c, (await agent.fs.readFile('/f.ts')).toString('utf8'))
      row.after[after]++
      if (after === 'wrong') wrongAfter.push(c)
    }
    return { byDrift, wrongAfter }
  } finally {
    await agent.close()
  }
}

/** Reads the sources of the repository at `root` (files of at most 64 KiB). */
export function loadSources(root: string): Array<{ name: string; text: string }> {
  return sourceFiles(root)
    .map((path) => ({ name: path.slice(root.length + 1), text: readFileSync(path, 'utf8') }))
    .filter((s) => s.text.length <= 64 * 1024)
}
