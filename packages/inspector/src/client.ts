import type { Change } from '@agentfs/core'
import type { FileVersion } from '@agentfs/fs'
import type { SnapshotChange, SnapshotInfo } from '@agentfs/history'
import type { OverlayChange } from '@agentfs/overlay'
import type { ToolStats } from '@agentfs/tool-calls'
import type { CallDetail, CallsOverTime, SessionSummary, TimelineCall } from './api/calls.js'
import type { BoundedDiff, FeedPage, KvView } from './api/feed.js'
import type { Blame, FileView, TreePage } from './api/files.js'
import type { SearchPage } from './api/search.js'

/** An answer other than 2xx from the inspector's API. */
export class InspectorApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message)
    this.name = 'InspectorApiError'
  }
}

type Params = Record<string, string | number | boolean | undefined>

/**
 * The inspector's JSON API, typed: what the web app uses, for scripts too.
 *
 * @example
 * const api = inspectorClient(server.origin, server.token)
 * const { calls } = await api.calls({ errors: true })
 */
export function inspectorClient(origin: string, token: string) {
  const get = async <T>(path: string, params: Params = {}): Promise<T> => {
    const url = new URL(path, origin)
    for (const [k, v] of Object.entries(params))
      if (v !== undefined && v !== false) url.searchParams.set(k, String(v))
    const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } })
    const body = (await res.json()) as T & { error?: string }
    if (!res.ok) throw new InspectorApiError(res.status, body.error ?? res.statusText)
    return body
  }
  return {
    info: () =>
      get<{
        path: string | null
        chunkSize: number
        compression: string | null
        lastChange: number
        snapshots: number
        allowWrites: boolean
        policy: boolean
      }>('/api/info'),
    tree: (p: { path?: string; cursor?: string; limit?: number } = {}) =>
      get<TreePage>('/api/tree', p),
    file: (p: { path: string; version?: string }) => get<FileView>('/api/file', p),
    history: (p: { path: string; limit?: number }) => get<FileVersion[]>('/api/file/history', p),
    diff: (p: { path: string; from: string; to?: string }) =>
      get<{ path: string; from: string; to: string; diff: string }>('/api/file/diff', p),
    blame: (p: { path: string }) => get<Blame>('/api/file/blame', p),
    /** The lines under `path` that hold `q` as written (`ignoreCase`: in any case). */
    search: (p: { q: string; path?: string; limit?: number; ignoreCase?: boolean }) =>
      get<SearchPage>('/api/search', p),
    calls: (
      p: {
        session?: string
        tool?: string
        errors?: boolean
        since?: number
        until?: number
        limit?: number
        offset?: number
      } = {},
    ) => get<{ calls: TimelineCall[]; more: boolean }>('/api/calls', p),
    call: (id: number) => get<CallDetail>(`/api/calls/${id}`),
    sessions: (p: { limit?: number } = {}) => get<SessionSummary[]>('/api/sessions', p),
    stats: (p: { session?: string } = {}) =>
      get<{ tools: ToolStats[]; overTime: CallsOverTime }>('/api/stats', p),
    changes: (
      p: {
        path?: string
        session?: string
        store?: 'fs' | 'kv'
        cursor?: number
        limit?: number
      } = {},
    ) => get<FeedPage>('/api/changes', p),
    snapshots: () => get<SnapshotInfo[]>('/api/snapshots'),
    snapshotDiff: (p: { from: string; to?: string }) =>
      get<BoundedDiff<SnapshotChange>>('/api/snapshots/diff', p),
    branch: () => get<({ base: unknown } & BoundedDiff<OverlayChange>) | null>('/api/branch'),
    kv: (p: { prefix?: string; cursor?: string; limit?: number } = {}) =>
      get<{ entries: KvView[]; cursor: string | null }>('/api/kv', p),
    kvEntry: (p: { key: string; limit?: number }) =>
      get<{ entry: KvView | null; changes: Change[] }>('/api/kv/entry', p),
    /** Takes a snapshot (the inspector must allow writes). */
    snapshot: async (p: { name?: string; reason?: string } = {}): Promise<SnapshotInfo> => {
      const res = await fetch(new URL('/api/snapshots', origin), {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify(p),
      })
      const body = (await res.json()) as SnapshotInfo & { error?: string }
      if (!res.ok) throw new InspectorApiError(res.status, body.error ?? res.statusText)
      return body
    },
  }
}

/** The typed client `inspectorClient` returns. */
export type InspectorClient = ReturnType<typeof inspectorClient>
