import { type AgentDatabase, AgentFsError, type Queryable } from '@agentfs/core'
import {
  createFileSystem,
  type FileSystem,
  type FileSystemOptions,
  type SqlFileSystem,
} from '@agentfs/fs'
import { HostFileSystem } from './host-fs.js'
import { OverlayFs } from './overlay-fs.js'

/** Where an overlay's base lives, as stored in the delta database. */
export type OverlayBaseDescription =
  | { readonly kind: 'host'; readonly path: string }
  | { readonly kind: 'agentfs'; readonly path: string }
  /** A snapshot of an AgentFS database (a branch): `path` is the database, `snapshot` its name. */
  | { readonly kind: 'snapshot'; readonly path: string; readonly snapshot: string }

/**
 * The table the reference AgentFS CLI uses for overlay settings (`base_path` = the host
 * directory). Created when an overlay is first configured.
 */
const CONFIG_DDL = `CREATE TABLE IF NOT EXISTS fs_overlay_config (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
)`

/** Stores the base description in the delta database. */
export async function saveOverlayBase(q: Queryable, base: OverlayBaseDescription): Promise<void> {
  await q.transaction(async (tx) => {
    await tx.execute({ sql: CONFIG_DDL })
    const put = (key: string, value: string) =>
      tx.execute({
        sql: 'INSERT INTO fs_overlay_config (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value',
        params: [key, value],
      })
    await put('base_kind', base.kind)
    await put('base_path', base.path)
    if (base.kind === 'snapshot') await put('base_snapshot', base.snapshot)
  })
}

/** Reads the stored base description, if this database holds an overlay. */
export async function readOverlayBase(q: Queryable): Promise<OverlayBaseDescription | undefined> {
  const table = await q.execute({
    sql: "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'fs_overlay_config'",
  })
  if (table.rows.length === 0) return undefined
  const { rows } = await q.execute<{ key: string; value: string }>({
    sql: 'SELECT key, value FROM fs_overlay_config',
  })
  const config = Object.fromEntries(rows.map((r) => [r.key, r.value]))
  if (config.base_path === undefined) return undefined
  if (config.base_kind === 'snapshot' && config.base_snapshot !== undefined)
    return { kind: 'snapshot', path: config.base_path, snapshot: config.base_snapshot }
  // The reference CLI writes only base_path, for a host directory.
  const kind = config.base_kind === 'agentfs' ? 'agentfs' : 'host'
  return { kind, path: config.base_path }
}

/** Options of {@link createOverlay}. */
export interface CreateOverlayOptions {
  /** The read-only base: a HostFileSystem, another AgentFS filesystem, any FileSystem. */
  readonly base: FileSystem
  /** The writable layer: an AgentFS filesystem in the delta database. */
  readonly delta: SqlFileSystem
  /**
   * Stored in the delta database so `openOverlay` can restore the overlay. Derived for a
   * HostFileSystem base; give it for an AgentFS base (its database path).
   */
  readonly describeBase?: OverlayBaseDescription
  /** Keep the base's text of files copied up, as merge ancestors (default: unless a snapshot). */
  readonly ancestors?: boolean
}

/**
 * Layers a writable AgentFS delta over a read-only base.
 *
 * @example
 * const overlay = await createOverlay({
 *   base: new HostFileSystem({ root: '/srv/project' }),
 *   delta: createFileSystem(await openDatabase({ driver })),
 * })
 */
export async function createOverlay(options: CreateOverlayOptions): Promise<OverlayFs> {
  const description =
    options.describeBase ??
    (options.base instanceof HostFileSystem
      ? { kind: 'host' as const, path: options.base.root }
      : undefined)
  if (description) await saveOverlayBase(options.delta.queryable, description)
  return new OverlayFs(options.base, options.delta, {
    ancestors: options.ancestors ?? description?.kind !== 'snapshot',
  })
}

/** Options of {@link openOverlay}. */
export interface OpenOverlayOptions {
  readonly fs?: FileSystemOptions
  /** Opens an `agentfs` base from its description (the SDK and CLI supply one). */
  readonly openBase?: (base: OverlayBaseDescription) => Promise<FileSystem>
}

/** Restores the overlay stored in a delta database (e.g. one made by `agentfs init --base DIR`). */
export async function openOverlay(
  db: AgentDatabase,
  options: OpenOverlayOptions = {},
): Promise<OverlayFs> {
  const description = await readOverlayBase(db)
  if (!description) {
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      'This database is not an overlay: it has no base to read through; make one with createOverlay() (or agentfs init DB --base DIR)',
    )
  }
  let base: FileSystem
  if (options.openBase) base = await options.openBase(description)
  else if (description.kind === 'host') base = new HostFileSystem({ root: description.path })
  else {
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      `The overlay's base is ${description.kind === 'snapshot' ? `snapshot '${description.snapshot}' of` : 'the AgentFS database'} ${description.path}; pass openBase to open it`,
    )
  }
  // A branch's snapshot is its ancestor already; other bases keep what copy-ups read.
  return new OverlayFs(base, createFileSystem(db, options.fs), {
    ancestors: description.kind !== 'snapshot',
  })
}
