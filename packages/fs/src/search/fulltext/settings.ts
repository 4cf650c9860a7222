import { AgentFsError, type Executor, type Queryable, readMeta, writeMeta } from '@agentfs/core'
import { compileGlob } from '../matchers.js'
import { META_SEARCH_STORE, openStore } from './store.js'

/** Which files the index holds: text files up to a size, optionally by glob. */
export interface SearchSettings {
  /** Files larger than this are not indexed (default 8 MiB; at most 64 MiB). */
  readonly maxFileSize?: number
  /** When given, only files whose path matches one of these globs are indexed. */
  readonly include?: readonly string[]
  /** Files whose path matches one of these globs are not indexed. */
  readonly exclude?: readonly string[]
  /**
   * Where the words are kept: `auto` (default) SQLite's FTS5 where the engine has it, else the
   * postings table; `postings` always the table — a database the Turso engine 0.7 must open
   * (it cannot load a schema holding FTS5 tables); `fts5` refused on an engine without it.
   */
  readonly store?: 'auto' | 'fts5' | 'postings'
}

/** The settings with every default filled in. */
export type ResolvedSearchSettings = Required<SearchSettings>

/** The `agentfs_meta` row holding the database's {@link SearchSettings} (JSON). */
export const META_SEARCH_SETTINGS = 'search.settings'
export const DEFAULT_MAX_FILE_SIZE = 8 << 20
export const MAX_MAX_FILE_SIZE = 64 << 20
/** Globs one setting may list. */
export const MAX_SETTING_GLOBS = 64

function invalid(hint: string): AgentFsError {
  return new AgentFsError('INVALID_ARGUMENT', `search settings: ${hint}`)
}

/** Checks and completes settings (globs compiled once to catch bad ones). */
export function resolveSettings(given: SearchSettings = {}): ResolvedSearchSettings {
  if (typeof given !== 'object' || given === null) throw invalid('settings must be an object')
  const maxFileSize = given.maxFileSize ?? DEFAULT_MAX_FILE_SIZE
  if (!Number.isSafeInteger(maxFileSize) || maxFileSize < 0 || maxFileSize > MAX_MAX_FILE_SIZE)
    throw invalid(
      `maxFileSize must be a whole number of bytes from 0 to ${MAX_MAX_FILE_SIZE}, not ${String(maxFileSize)}`,
    )
  const globs = (name: string, list: unknown): string[] => {
    if (list === undefined) return []
    if (!Array.isArray(list) || list.some((g) => typeof g !== 'string' || g === ''))
      throw invalid(`${name} must be a list of non-empty glob strings`)
    if (list.length > MAX_SETTING_GLOBS)
      throw invalid(`${name} may list at most ${MAX_SETTING_GLOBS} globs, not ${list.length}`)
    for (const g of list) compileGlob(g, { dot: true, matchBase: true })
    return [...list]
  }
  const store = given.store ?? 'auto'
  if (store !== 'auto' && store !== 'fts5' && store !== 'postings')
    throw invalid(`store must be auto, fts5 or postings, not ${String(store)}`)
  return {
    maxFileSize,
    include: globs('include', given.include),
    exclude: globs('exclude', given.exclude),
    store,
  }
}

/** The database's settings (defaults when none were set). */
export async function readSettings(q: Executor): Promise<ResolvedSearchSettings> {
  const stored = await readMeta(q, META_SEARCH_SETTINGS)
  if (stored === undefined || stored === null) return resolveSettings()
  try {
    return resolveSettings(JSON.parse(String(stored)) as SearchSettings)
  } catch (error) {
    throw new AgentFsError(
      'CORRUPT',
      `the search settings stored in agentfs_meta (${META_SEARCH_SETTINGS}) are not valid: ${error instanceof Error ? error.message : String(error)}; set them again with \`agentfs search DB --settings\``,
    )
  }
}

/**
 * Stores new settings and empties the index in the same transaction: the next search rebuilds
 * it under them. Returns the settings as stored.
 */
export async function writeSettings(
  q: Queryable,
  given: SearchSettings,
): Promise<ResolvedSearchSettings> {
  const settings = resolveSettings(given)
  await q.transaction(async (tx) => {
    await writeMeta(tx, META_SEARCH_SETTINGS, JSON.stringify(settings))
    await clearIndex(tx)
    // The store is chosen now: `postings` drops the FTS5 tables in this transaction.
    await openStore(tx, settings.store)
  })
  return settings
}

/** Empties the index (its next catch-up rebuilds it). */
export async function clearIndex(tx: Executor): Promise<void> {
  await tx.execute({ sql: 'DELETE FROM agentfs_search_doc' })
  await tx.execute({ sql: 'DELETE FROM agentfs_search_posting' })
  await writeMeta(tx, META_SEARCH_STORE, undefined)
}

/** Whether a path is indexed under the settings' globs. */
export type Filter = (path: string) => boolean

export function membership(settings: ResolvedSearchSettings): Filter | undefined {
  if (settings.include.length === 0 && settings.exclude.length === 0) return undefined
  const compile = (g: string) => compileGlob(g, { dot: true, matchBase: true })
  const include = settings.include.map(compile)
  const exclude = settings.exclude.map(compile)
  return (path) =>
    (include.length === 0 || include.some((m) => m(path))) && !exclude.some((m) => m(path))
}
