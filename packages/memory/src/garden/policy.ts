import { posix } from 'node:path'
import type { ContentChange, FsPolicy } from '@agentfs/fs'
import { checkEdit } from '../markdown/guard.js'
import { createGarden, type Garden, type GardenOptions } from './garden.js'

/**
 * The memory policy: seed 003's hard blocks as a filesystem policy, so that every way to the
 * gardens — the generic file tools (`write_file`, `edit_file`, `delete`), a shell (just-bash),
 * MCP, a FUSE mount — is held to them, not only the memory tools. Give an agent
 * `agent.fs.restrict(memoryPolicy())` instead of `agent.fs`.
 *
 * Under `{root}/users/{userId}/`, for every user: no file is deleted or moved away; a garden
 * file (one of the templates) keeps its hidden anchors and identity frontmatter, and keeps
 * parsing; a history copy is written once and never changed; nothing else is written there (the
 * allowed roots). Directories may be made. A maintainer's move (`fs_move`) needs a filesystem
 * without the policy. Files outside `users/` are the policy's no
 * concern (narrow them with `read`/`write` as usual).
 */
export function memoryPolicy(options: Omit<GardenOptions, 'userId'> = {}): FsPolicy {
  const root = posix.resolve('/', options.root ?? '/')
  const users = posix.join(root, 'users')
  const gardens = new Map<string, Garden | string>()
  const gardenOf = (userId: string): Garden | string => {
    let found = gardens.get(userId)
    if (found === undefined) {
      try {
        found = createGarden({ ...options, userId })
      } catch (error) {
        found = error instanceof Error ? error.message : String(error)
      }
      // Bounded: a hostile agent naming many users does not grow it without end.
      if (gardens.size > 1000) gardens.clear()
      gardens.set(userId, found)
    }
    return found
  }
  return {
    content: [
      {
        paths: [`${users}/**`],
        check: (change) => judge(change, users, gardenOf),
        maxBytes: 1 << 20,
      },
    ],
  }
}

function judge(
  change: ContentChange,
  users: string,
  gardenOf: (userId: string) => Garden | string,
): string | undefined {
  const userId = change.path.slice(users.length + 1).split('/')[0] ?? ''
  const garden = gardenOf(userId)
  if (typeof garden === 'string') return `${change.path} is under no user's garden (${garden})`
  if (change.after === null)
    return change.before === null
      ? undefined
      : `${change.path} is in ${userId}'s garden; deleting or moving its files is blocked`
  if (garden.isHistory(change.path))
    return change.before === null
      ? undefined
      : `${change.path} is a history copy; history copies are never edited`
  if (garden.match(change.path) === undefined)
    return `${change.path} is outside the allowed roots of ${userId}'s garden (${garden.templates.join(', ')}); nothing is written there`
  const before = change.before === null ? null : change.before.toString('utf8')
  const report = checkEdit(before, change.after.toString('utf8'))
  return report.blocked ? report.reasons.join('; ') : undefined
}
