import { scaleBand, scaleLinear } from 'd3-scale'
import { select } from 'd3-selection'
import { api, bytes, diffView, errorBox, h, link, ms, time } from './dom.js'

interface Change {
  seq: number
  atUs: number
  op: string
  path: string | null
  path2: string | null
  version: string | null
  size: number | null
  sessionId: string | null
  toolCallId: number | null
  txid: number
}
interface Session {
  sessionId: string | null
  calls: number
  errors: number
  files: number
  changes: number
  bytesWritten: number
  firstAt: number | null
  lastAt: number | null
}

function changeRow(c: Change, live = false): HTMLTableRowElement {
  const file = c.path && !c.op.startsWith('kv-') && c.version
  return h(
    'tr',
    { 'data-seq': c.seq, class: live ? 'live' : undefined },
    h('td', {}, c.seq),
    h('td', {}, time(c.atUs / 1000)),
    h('td', {}, c.op),
    h(
      'td',
      {},
      file
        ? h(
            'a',
            { href: link('files', { path: c.path ?? '', version: c.version ?? '' }) },
            c.path ?? '',
          )
        : (c.path ?? ''),
      c.path2 ? ` → ${c.path2}` : '',
    ),
    h('td', {}, bytes(c.size)),
    h('td', {}, c.sessionId ?? '—'),
    h(
      'td',
      {},
      c.toolCallId ? h('a', { href: link(`call/${c.toolCallId}`) }, `#${c.toolCallId}`) : '—',
    ),
  )
}

let live: EventSource | undefined
/** Closes the live feed when another view opens. */
export function stopLive(): void {
  live?.close()
  live = undefined
}

/** Changes: per-session summaries, the feed (newest first) and new changes as they commit. */
export async function changesView(main: HTMLElement, params: URLSearchParams): Promise<void> {
  const path = params.get('path') ?? ''
  const session = params.get('session') ?? ''
  const form = h(
    'form',
    { class: 'filters', 'aria-label': 'Change filters' },
    h('label', {}, 'path ', h('input', { name: 'path', value: path, placeholder: '/dir' })),
    h('label', {}, ' session ', h('input', { name: 'session', value: session })),
    ' ',
    h('button', { type: 'submit' }, 'Apply'),
  )
  form.addEventListener('submit', (e) => {
    e.preventDefault()
    const d = new FormData(form)
    location.hash = link('changes', {
      path: String(d.get('path') || '') || undefined,
      session: String(d.get('session') || '') || undefined,
    })
  })
  const sessions = await api<Session[]>('/api/sessions')
  main.append(
    h('h2', {}, 'Sessions'),
    h(
      'table',
      { class: 'sessions' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          [
            'session',
            'calls',
            'errors',
            'files touched',
            'changes',
            'bytes written',
            'first',
            'last',
          ].map((t) => h('th', {}, t)),
        ),
      ),
      h(
        'tbody',
        {},
        sessions.map((s) =>
          h(
            'tr',
            {},
            h(
              'td',
              {},
              s.sessionId === null
                ? '(none)'
                : h('a', { href: link('changes', { session: s.sessionId }) }, s.sessionId),
            ),
            h('td', {}, s.calls),
            h('td', { class: s.errors ? 'bad' : undefined }, s.errors),
            h('td', {}, s.files),
            h('td', {}, s.changes),
            h('td', {}, bytes(s.bytesWritten)),
            h('td', {}, time(s.firstAt)),
            h('td', {}, time(s.lastAt)),
          ),
        ),
      ),
    ),
  )
  const status = h('p', { class: 'live-status', 'aria-live': 'polite' }, 'connecting…')
  const body = h('tbody', {})
  main.append(
    h('h2', {}, 'Changes'),
    form,
    status,
    h(
      'table',
      { class: 'feed' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ['seq', 'when', 'change', 'path', 'size', 'session', 'call'].map((t) => h('th', {}, t)),
        ),
      ),
      body,
    ),
  )
  const page = await api<{ changes: Change[]; cursor: number | null; last: number }>(
    '/api/changes',
    { path, session, limit: 200 },
  )
  for (const c of page.changes) body.append(changeRow(c))
  let cursor = page.cursor
  const more = h(
    'button',
    {
      type: 'button',
      onclick: async () => {
        if (cursor === null) return
        const next = await api<{ changes: Change[]; cursor: number | null }>('/api/changes', {
          path,
          session,
          limit: 200,
          cursor,
        })
        for (const c of next.changes) body.append(changeRow(c))
        cursor = next.cursor
        if (cursor === null) more.remove()
      },
    },
    'older…',
  )
  if (cursor !== null) main.append(more)
  stopLive()
  const url = new URL('/api/changes/stream', location.origin)
  url.searchParams.set('cursor', String(page.last))
  if (path) url.searchParams.set('path', path)
  if (session) url.searchParams.set('session', session)
  live = new EventSource(url)
  live.addEventListener('ready', () => {
    status.textContent = 'live: new changes appear at the top'
  })
  live.addEventListener('change', (e) => {
    const c = JSON.parse((e as MessageEvent).data) as Change
    body.prepend(changeRow(c, true))
  })
  live.addEventListener('error', () => {
    status.textContent = 'live view disconnected; reload to reconnect'
  })
}

interface Snapshot {
  id: number
  name: string
  createdAt: number
  seq: number
  kind: string
  reason: string | null
}
interface SnapChange {
  path: string
  kind: string
  type: string
  diff?: string
}

function changeList({
  changes,
  truncated,
}: {
  changes: SnapChange[]
  truncated: boolean
}): HTMLElement {
  if (changes.length === 0) return h('p', { class: 'hint' }, 'No changes.')
  return h(
    'div',
    { class: 'snap-changes' },
    truncated
      ? h(
          'p',
          { class: 'hint' },
          'Too many changes to show whole: the list or its diffs are cut (agentfs diff prints them all).',
        )
      : null,
    changes.map((c) =>
      h(
        'div',
        { class: 'snap-change' },
        h(
          'h4',
          {},
          `${c.kind === 'added' ? 'A' : c.kind === 'deleted' ? 'D' : 'M'} ${c.path}${c.type === 'directory' ? '/' : ''}`,
        ),
        c.diff ? diffView(c.diff) : null,
      ),
    ),
  )
}

/** Snapshots and branches: the list, a diff of any two (or one against now), the branch's changes. */
export async function snapshotsView(main: HTMLElement, params: URLSearchParams): Promise<void> {
  const snaps = await api<Snapshot[]>('/api/snapshots')
  main.append(h('h2', {}, 'Snapshots'))
  if (snaps.length === 0)
    main.append(h('p', { class: 'hint' }, 'No snapshots (agentfs snapshot DB NAME takes one).'))
  else
    main.append(
      h(
        'table',
        { class: 'snapshots' },
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            ['name', 'taken', 'kind', 'reason', 'feed seq'].map((t) => h('th', {}, t)),
          ),
        ),
        h(
          'tbody',
          {},
          snaps.map((s) =>
            h(
              'tr',
              {},
              h('td', {}, s.name),
              h('td', {}, time(s.createdAt)),
              h('td', {}, s.kind),
              h('td', {}, s.reason ?? ''),
              h('td', {}, s.seq),
            ),
          ),
        ),
      ),
    )
  const from = params.get('from') ?? snaps.at(-1)?.name ?? ''
  const to = params.get('to') ?? ''
  const opts = (sel: string, now: boolean) => [
    ...(now ? [h('option', { value: '' }, 'now')] : []),
    ...snaps.map((s) => h('option', { value: s.name, selected: s.name === sel }, s.name)),
  ]
  const form = h(
    'form',
    { class: 'filters', 'aria-label': 'Compare snapshots' },
    h('label', {}, 'from ', h('select', { name: 'from' }, opts(from, false))),
    h('label', {}, ' to ', h('select', { name: 'to' }, opts(to, true))),
    ' ',
    h('button', { type: 'submit' }, 'Compare'),
  )
  form.addEventListener('submit', (e) => {
    e.preventDefault()
    const d = new FormData(form)
    location.hash = link('snapshots', {
      from: String(d.get('from') ?? ''),
      to: String(d.get('to') || '') || undefined,
    })
  })
  if (snaps.length > 0) main.append(form)
  if (params.get('from')) {
    try {
      main.append(
        changeList(
          await api<{ changes: SnapChange[]; truncated: boolean }>('/api/snapshots/diff', {
            from,
            to,
          }),
        ),
      )
    } catch (error) {
      main.append(errorBox(error))
    }
  }
  try {
    const branch = await api<{
      base: { kind: string; path: string; snapshot?: string }
      changes: SnapChange[]
      truncated: boolean
    } | null>('/api/branch')
    if (branch)
      main.append(
        h(
          'h2',
          {},
          `Branch: changes against its base (${branch.base.kind} ${branch.base.path}${branch.base.snapshot ? ` at ${branch.base.snapshot}` : ''})`,
        ),
        changeList(branch),
      )
  } catch (error) {
    main.append(h('h2', {}, 'Branch'), errorBox(error))
  }
}

interface KvView {
  key: string
  version: number
  updatedAt: number
  json: string
  truncated: boolean
}

/** KV: keys by prefix; a key's value as formatted JSON and its changes. */
export async function kvView(main: HTMLElement, params: URLSearchParams): Promise<void> {
  const prefix = params.get('prefix') ?? ''
  const form = h(
    'form',
    { class: 'filters', 'aria-label': 'Keys' },
    h('label', {}, 'prefix ', h('input', { name: 'prefix', value: prefix })),
    ' ',
    h('button', { type: 'submit' }, 'List'),
  )
  form.addEventListener('submit', (e) => {
    e.preventDefault()
    location.hash = link('kv', {
      prefix: String(new FormData(form).get('prefix') ?? '') || undefined,
    })
  })
  main.append(h('h2', {}, 'Key-value store'), form)
  const page = await api<{ entries: KvView[]; cursor: string | null }>('/api/kv', {
    prefix,
    limit: 500,
  })
  const list = h(
    'ul',
    { class: 'keys' },
    page.entries.map((e) =>
      h(
        'li',
        {},
        h('a', { href: link('kv', { prefix: prefix || undefined, key: e.key }) }, e.key),
        ` v${e.version}`,
      ),
    ),
  )
  main.append(
    h(
      'div',
      { class: 'split' },
      h(
        'nav',
        { class: 'tree-pane', 'aria-label': 'Keys' },
        list,
        page.cursor ? h('p', { class: 'hint' }, 'more keys: narrow the prefix') : null,
      ),
      h('section', { class: 'kv-entry' }),
    ),
  )
  const key = params.get('key')
  const pane = main.querySelector('.kv-entry') as HTMLElement
  if (!key) {
    pane.append(h('p', { class: 'hint' }, page.entries.length ? 'Pick a key.' : 'No keys.'))
    return
  }
  try {
    const { entry, changes } = await api<{ entry: KvView | null; changes: Change[] }>(
      '/api/kv/entry',
      { key, limit: 50 },
    )
    pane.append(
      h('h2', {}, key),
      ...(entry
        ? [
            h(
              'p',
              { class: 'meta' },
              `version ${entry.version} · updated ${time(entry.updatedAt * 1000)}`,
            ),
            h('pre', { class: 'json' }, entry.json),
            ...(entry.truncated ? [h('p', { class: 'hint' }, 'value cut at 256 KiB')] : []),
          ]
        : [h('p', { class: 'hint' }, 'deleted')]),
      h('h3', {}, 'Changes'),
      h(
        'table',
        { class: 'feed' },
        h(
          'tbody',
          {},
          changes.map((c) => changeRow(c)),
        ),
      ),
    )
  } catch (error) {
    pane.append(errorBox(error))
  }
}

interface ToolStats {
  name: string
  totalCalls: number
  successful: number
  failed: number
  p50DurationMs: number | null
  p95DurationMs: number | null
  avgDurationMs: number | null
}

/** Stats: per-tool p50/p95 and error rate; calls over time as a bar chart. */
export async function statsView(main: HTMLElement): Promise<void> {
  const { tools, overTime } = await api<{
    tools: ToolStats[]
    overTime: { start: number; width: number; buckets: { calls: number; errors: number }[] }
  }>('/api/stats')
  main.append(
    h('h2', {}, 'Tools'),
    h(
      'table',
      { class: 'stats' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ['tool', 'calls', 'failed', 'error rate', 'avg', 'p50', 'p95'].map((t) => h('th', {}, t)),
        ),
      ),
      h(
        'tbody',
        {},
        tools.map((t) =>
          h(
            'tr',
            {},
            h('td', {}, h('a', { href: link('timeline', { tool: t.name }) }, t.name)),
            h('td', {}, t.totalCalls),
            h('td', { class: t.failed ? 'bad' : undefined }, t.failed),
            h('td', {}, `${t.totalCalls ? ((100 * t.failed) / t.totalCalls).toFixed(1) : '0.0'} %`),
            h('td', {}, ms(t.avgDurationMs)),
            h('td', {}, ms(t.p50DurationMs)),
            h('td', {}, ms(t.p95DurationMs)),
          ),
        ),
      ),
    ),
  )
  main.append(h('h2', {}, 'Calls over time'))
  const buckets = overTime.buckets
  if (buckets.length === 0) {
    main.append(h('p', { class: 'hint' }, 'No calls.'))
    return
  }
  const width = Math.max(600, main.clientWidth - 40)
  const height = 220
  const x = scaleBand<number>()
    .domain(buckets.map((_, i) => i))
    .range([40, width - 10])
    .padding(0.1)
  const y = scaleLinear()
    .domain([0, Math.max(1, ...buckets.map((b) => b.calls))])
    .range([height - 30, 10])
  const svg = select(main)
    .append('svg')
    .attr('class', 'over-time')
    .attr('width', width)
    .attr('height', height)
    .attr('role', 'img')
    .attr(
      'aria-label',
      `Calls over time from ${time(overTime.start)}, ${buckets.length} buckets of ${overTime.width} ms`,
    )
  buckets.forEach((b, i) => {
    const g = svg.append('g').attr('class', 'bucket')
    g.append('rect')
      .attr('class', 'ok')
      .attr('x', x(i) ?? 0)
      .attr('width', x.bandwidth())
      .attr('y', y(b.calls))
      .attr('height', y(0) - y(b.calls))
    g.append('rect')
      .attr('class', 'err')
      .attr('x', x(i) ?? 0)
      .attr('width', x.bandwidth())
      .attr('y', y(b.errors))
      .attr('height', y(0) - y(b.errors))
    g.append('title').text(
      `${time(overTime.start + i * overTime.width)}: ${b.calls} calls, ${b.errors} errors`,
    )
  })
  svg
    .append('text')
    .attr('x', 40)
    .attr('y', height - 8)
    .text(time(overTime.start))
  svg
    .append('text')
    .attr('x', width - 10)
    .attr('y', height - 8)
    .attr('text-anchor', 'end')
    .text(time(overTime.start + buckets.length * overTime.width))
  svg
    .append('text')
    .attr('x', 4)
    .attr('y', 18)
    .text(String(Math.max(...buckets.map((b) => b.calls))))
}
