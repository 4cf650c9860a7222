import { type ChunkFormat, fsError, type Queryable } from '@agentfs/core'
import { readAll } from '../storage/chunks.js'
import { type InodeRow, isDir } from '../storage/inode.js'
import { loadInode } from '../storage/mutate.js'
import { CONTENT_RULE_MAX_BYTES, type ContentRule } from './policy.js'

/**
 * The content side of a policy: a change to a file some {@link ContentRule} judges keeps the
 * file's bytes from before it, and after it the rules see both — all in the change's
 * transaction, so a refusal rolls the change back.
 */

/** A judged file of a change under way: where it is, its rules, its content before. */
export interface Judged {
  readonly real: string
  readonly rules: readonly ContentRule[]
  readonly before: Buffer | null
  readonly syscall: string
}

const S_IFMT = 0o170000
const S_IFREG = 0o100000

export function limitOf(rules: readonly ContentRule[]): number {
  return Math.min(...rules.map((r) => r.maxBytes ?? CONTENT_RULE_MAX_BYTES))
}

/** The bytes of `node` (null unless a regular file), refused past `limit`. */
export async function contentOf(
  q: Queryable,
  format: ChunkFormat,
  node: InodeRow | undefined,
  limit: number,
  syscall: string,
  path: string,
): Promise<Buffer | null> {
  if (!node || isDir(node.mode) || (node.mode & S_IFMT) !== S_IFREG) return null
  if (node.size > limit)
    throw fsError('EPERM', syscall, path, {
      hint: `${path} is ${node.size} bytes, more than the ${limit} its content rule reads; nothing was changed`,
    })
  return Buffer.from(await readAll(q, node.ino, node.size, format, syscall, path))
}

/** The content of inode `ino` now, for a rule of `judged`. */
export async function contentOfIno(
  q: Queryable,
  format: ChunkFormat,
  ino: number,
  rules: readonly ContentRule[],
  syscall: string,
  path: string,
): Promise<Buffer | null> {
  return contentOf(q, format, await loadInode(q, ino), limitOf(rules), syscall, path)
}

/** Applies `judged`'s rules to the change from its content before to `after`. */
export function applyRules(judged: Judged, after: Buffer | null, syscall = judged.syscall): void {
  // Neither before nor after a file: nothing of the rules' to judge.
  if (after === null && judged.before === null) return
  for (const rule of judged.rules) {
    let reason: string | undefined
    try {
      reason = rule.check({ path: judged.real, before: judged.before, after, syscall })
    } catch (error) {
      reason = error instanceof Error ? error.message : String(error)
    }
    if (reason !== undefined)
      throw fsError('EPERM', syscall, judged.real, {
        hint: `${reason.split('\n')[0]} (a content rule of the policy; nothing was changed)`,
      })
  }
}
