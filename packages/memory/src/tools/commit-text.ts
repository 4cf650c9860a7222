import { posix } from 'node:path'
import { type IntegrityKey, toMillis } from '@agentfs/core'
import type { FileSystem } from '@agentfs/fs'
import { MemoryError } from '../errors.js'
import { canonicalHash, lineHash } from '../events/event.js'
import type { GardenPath } from '../garden/garden.js'
import { parseGardenDocument } from '../markdown/document.js'
import { checkEdit } from '../markdown/guard.js'
import { type LintResult, lintDocument } from '../markdown/lint.js'
import { patchSection, sectionBody } from '../markdown/patch-section.js'
import type { MemoryContext } from './context.js'
import type { Written } from './saga.js'

/** How a write of a garden file is checked and recorded. */
export interface TextChange {
  readonly file: GardenPath
  readonly before: string | null
  readonly after: string
  readonly op: string
  readonly anchor?: string | undefined
  readonly rationale?: string | undefined
  readonly override_rationale?: string | undefined
  /** A material edit appends a line to the file's Change Log (default true). */
  readonly material?: boolean
  /** Write by appending the bytes after `before` (fs_append) rather than replacing the file. */
  readonly append?: boolean
}

/** The answer of a garden write. */
export interface TextResult {
  readonly before_hash: string | null
  readonly after_hash: string
  readonly warnings: string[]
  readonly history_path?: string
  readonly change_log?: string
  readonly new_size: number
}

/** The event type of a write to `file` (the caller may name another). */
export function eventType(file: GardenPath): string {
  if (file.kind === 'profile')
    return 'relId' in file.params ? 'relationship_update' : 'profile_update'
  if (file.kind === 'notes') return 'observation'
  return `${file.kind}_update`
}

/** The anchor of a file's Change Log section, if it has one. */
function changeLogOf(text: string): string | undefined {
  return (
    parseGardenDocument(text).sections.find(
      (s) => s.anchor !== null && /^change-?log v/.test(s.anchor),
    )?.anchor ?? undefined
  )
}

/**
 * Checks and writes one change of a garden file: the hard blocks (anchors, identity
 * frontmatter), lint (a passed cap needs an override rationale), the Change Log line of a
 * material edit, the history copy of a profile's previous text, then the write itself.
 */
export async function commitText(
  ctx: MemoryContext,
  fs: FileSystem,
  keys: readonly IntegrityKey[],
  change: TextChange,
): Promise<Written<TextResult>> {
  const { file, before } = change
  let after = change.after
  const blocks = checkEdit(before, after)
  if (blocks.blocked)
    throw new MemoryError('BLOCKED', `refused, nothing written: ${blocks.reasons.join('; ')}`)
  const lint: LintResult = lintDocument(after, ctx.options.lint ?? {})
  if (lint.caps_exceeded && change.override_rationale === undefined)
    throw new MemoryError(
      'RATIONALE_REQUIRED',
      `the edit passes a cap (${lint.diagnostics
        .filter((d) => d.cap)
        .map((d) => d.message)
        .join(
          '; ',
        )}); shorten it, or give a one-line override_rationale and it will be recorded in the event and the Change Log`,
    )
  const now = new Date(toMillis(ctx.clock.now()))
  const log = changeLogOf(after)
  let change_log: string | undefined
  const material = (change.material ?? true) && !change.append
  if (
    log !== undefined &&
    log !== change.anchor &&
    (material || change.override_rationale !== undefined)
  ) {
    const what = change.anchor ? `${change.op} '${change.anchor}'` : change.op
    change_log = `- ${now.toISOString().slice(0, 10)}: ${what}${change.rationale ? ` — ${change.rationale}` : ''}${change.override_rationale ? ` (override: ${change.override_rationale})` : ''}`
    after = patchSection(after, log, { append: change_log })
  }
  let history_path: string | undefined
  if (file.kind === 'profile' && before !== null) {
    history_path = ctx.garden.historyPath(file.path, now)
    await fs.mkdir(posix.dirname(history_path), { recursive: true })
    await fs.writeFile(history_path, before, { flag: 'wx' })
  }
  if (before === null) await fs.mkdir(posix.dirname(file.path), { recursive: true })
  if (change.append && before !== null) await fs.appendFile(file.path, after.slice(before.length))
  else await fs.writeFile(file.path, after)
  const after_hash = canonicalHash(after)
  const content = change.anchor ? sectionBody(parseGardenDocument(after), change.anchor) : after
  return {
    value: {
      before_hash: before === null ? null : canonicalHash(before),
      after_hash,
      warnings: lint.warnings,
      ...(history_path ? { history_path } : {}),
      ...(change_log ? { change_log } : {}),
      new_size: Buffer.byteLength(after),
    },
    event: {
      op: change.op,
      before_hash: before === null ? null : canonicalHash(before),
      intended_hash: after_hash,
      lint: {
        warnings: lint.warnings,
        caps_exceeded: lint.caps_exceeded,
        codes: lint.diagnostics.map((d) => d.code),
      },
      override_rationale: change.override_rationale ?? null,
    },
    after_hash,
    line_hash: keys[0] ? lineHash(keys[0], content) : null,
  }
}
