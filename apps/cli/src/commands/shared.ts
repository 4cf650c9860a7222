import type { AgentFS, Change } from '@agentfs/sdk'
import { databasePath, explainDatabaseError, openExisting } from '../open.js'

export type Out = (text: string) => void
export const print: Out = (text) => process.stdout.write(`${text}\n`)
export const json = (value: unknown) =>
  print(JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? v.toString() : v), 2))

/** Colour on a terminal unless NO_COLOR is set (https://no-color.org), or FORCE_COLOR asks. */
/** What a change touched, as `log` and `timeline --changes` print it: `write /a.md (5 B)`. */
export function changeTarget(c: Change): string {
  const paths = c.path2 === null ? (c.path ?? '') : `${c.path} -> ${c.path2}`
  const size = c.size === null || c.op.startsWith('kv') ? '' : ` (${c.size} B)`
  return `${c.op} ${paths}${size}`
}

export function useColor(stream: NodeJS.WriteStream = process.stdout): boolean {
  if (process.env.NO_COLOR !== undefined && process.env.NO_COLOR !== '') return false
  if (process.env.FORCE_COLOR !== undefined && process.env.FORCE_COLOR !== '0') return true
  return stream.isTTY === true
}

/** A unified diff with added lines green, removed ones red and hunk headers cyan. */
export function colorDiff(diff: string, enabled: boolean): string {
  if (!enabled) return diff
  const paint = (code: number, line: string) => `\x1b[${code}m${line}\x1b[0m`
  return diff
    .split('\n')
    .map((line) =>
      line.startsWith('+++') || line.startsWith('---')
        ? paint(1, line)
        : line.startsWith('+')
          ? paint(32, line)
          : line.startsWith('-')
            ? paint(31, line)
            : line.startsWith('@@')
              ? paint(36, line)
              : line,
    )
    .join('\n')
}

/** A commander option parser that accepts only a positive whole number, saying so otherwise. */
export function positiveInteger(flag: string): (value: string) => number {
  return (value) => {
    const n = Number(value)
    if (!Number.isSafeInteger(n) || n < 1)
      throw new Error(`${flag} expects a positive whole number, got ${JSON.stringify(value)}`)
    return n
  }
}

/** A commander option parser that accepts only a number ≥ 0, saying so otherwise. */
export function nonNegativeNumber(flag: string): (value: string) => number {
  return (value) => {
    const n = value.trim() === '' ? Number.NaN : Number(value)
    if (!Number.isFinite(n) || n < 0)
      throw new Error(`${flag} expects a number ≥ 0, got ${JSON.stringify(value)}`)
    return n
  }
}

const UNITS: Record<string, number> = {
  '': 1,
  b: 1,
  kib: 1024,
  mib: 1024 ** 2,
  gib: 1024 ** 3,
  tib: 1024 ** 4,
}

/**
 * A commander option parser for a size in bytes: a whole number with an optional unit (B, KiB,
 * MiB, GiB, TiB), or `unlimited` (Infinity: commander keeps no null).
 */
export function byteSize(flag: string): (value: string) => number {
  return (value) => {
    const text = value.trim()
    if (text.toLowerCase() === 'unlimited') return Number.POSITIVE_INFINITY
    const m = /^(\d+)\s*([a-z]*)$/i.exec(text)
    const unit = m ? UNITS[m[2]!.toLowerCase()] : undefined
    const n = m && unit !== undefined ? Number(m[1]) * unit : Number.NaN
    if (!Number.isSafeInteger(n))
      throw new Error(
        `${flag} expects bytes (e.g. 500MiB, 2GiB, 1048576) or unlimited, got ${JSON.stringify(value)}`,
      )
    return n
  }
}

export async function withAgent<T>(
  target: string,
  fn: (agent: AgentFS) => Promise<T>,
  options: { migrate?: boolean } = {},
): Promise<T> {
  const agent = await openExisting(target, options)
  try {
    return await fn(agent)
  } catch (error) {
    throw explainDatabaseError(error, databasePath(target))
  } finally {
    await agent.close()
  }
}
