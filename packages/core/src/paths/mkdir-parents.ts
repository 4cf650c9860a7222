import { fsError } from '../errors.js'
import { normalizePath, parsePath } from './path.js'

/** What `mkdir -p` needs from a filesystem, for {@link mkdirParents}. */
export interface MkdirParentsSteps<Entry> {
  /**
   * The entry at `prefix` (an absolute path), a final link not followed, and how to create a
   * directory there when there is none. Undefined when nothing is to be done at that prefix.
   */
  probe(prefix: string): Promise<{ entry: Entry | undefined; create(): Promise<void> } | undefined>
  /** The entry at `prefix` with links followed (it throws as resolution does). */
  follow(prefix: string): Promise<Entry | undefined>
  isSymbolicLink(entry: Entry): boolean
  isDirectory(entry: Entry): boolean
}

/**
 * `mkdir(path, { recursive: true })` as Node does it, over any filesystem: each missing
 * component is created; an existing one must be a directory, through links (a loop is ELOOP, a
 * dangling link ENOENT as the last component and ENOTDIR (naming the link) before it, a non-directory EEXIST as
 * the last and ENOTDIR before). Returns the first directory created, as Node does, or undefined.
 * Each round handles one component, so it ends after as many rounds as the path has.
 */
export async function mkdirParents<Entry>(
  path: string,
  steps: MkdirParentsSteps<Entry>,
): Promise<string | undefined> {
  const parts = parsePath(path, 'mkdir').parts
  let first: string | undefined
  for (let i = 1; i <= parts.length; i++) {
    const prefix = `/${parts.slice(0, i).join('/')}`
    const last = i === parts.length
    const probed = await steps.probe(prefix)
    if (probed === undefined) continue
    if (probed.entry !== undefined) {
      let target = probed.entry
      if (steps.isSymbolicLink(target)) {
        try {
          target = (await steps.follow(prefix)) ?? target
        } catch (error) {
          const code = (error as { code?: unknown }).code
          if (code === 'ELOOP') throw fsError('ELOOP', 'mkdir', path)
          if (last && code === 'ENOENT') throw fsError('ENOENT', 'mkdir', path)
          // A dangling link before the last component: Node's fs.promises names the link.
          throw fsError('ENOTDIR', 'mkdir', code === 'ENOENT' ? normalizePath(prefix) : path)
        }
      }
      if (!steps.isDirectory(target)) throw fsError(last ? 'EEXIST' : 'ENOTDIR', 'mkdir', path)
      continue
    }
    await probed.create()
    first ??= normalizePath(prefix)
  }
  return first
}
