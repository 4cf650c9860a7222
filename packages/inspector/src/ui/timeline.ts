import { axisTop } from 'd3-axis'
import { scaleLinear } from 'd3-scale'
import { select } from 'd3-selection'
import { api, bytes, errorBox, h, link, ms, PALETTE, time } from './dom.js'

interface Call {
  id: number
  name: string
  status: string
  startedAt: number
  durationMs: number | null
  sessionId: string | null
  parentId: number | null
  error: string | null
}
interface Change {
  seq: number
  op: string
  path: string | null
  path2: string | null
  version: string | null
  size: number | null
  txid: number
  atUs: number
}

const ROW = 22
const LABEL = 220

/** Calls in a waterfall: one row per call, by start time, children under their parent. */
function order(calls: Call[]): { call: Call; depth: number }[] {
  const byId = new Map(calls.map((c) => [c.id, c]))
  const children = new Map<number, Call[]>()
  const roots: Call[] = []
  for (const c of calls) {
    if (c.parentId !== null && byId.has(c.parentId)) {
      const list = children.get(c.parentId) ?? []
      list.push(c)
      children.set(c.parentId, list)
    } else roots.push(c)
  }
  const out: { call: Call; depth: number }[] = []
  const walk = (c: Call, depth: number) => {
    out.push({ call: c, depth })
    for (const child of children.get(c.id) ?? []) if (depth < 32) walk(child, depth + 1)
  }
  const sessions = [...new Set(roots.map((c) => c.sessionId ?? ''))]
  for (const s of sessions) for (const c of roots) if ((c.sessionId ?? '') === s) walk(c, 0)
  return out
}

/** A legend's colour key (set through the CSSOM: the page's policy allows no inline styles). */
function swatch(colour: string): HTMLElement {
  const el = h('span', { class: 'swatch' })
  el.style.background = colour
  return el
}

/** Timeline: filters, the Gantt chart of calls, and the selected call below. */
export async function timelineView(main: HTMLElement, params: URLSearchParams): Promise<void> {
  const [sessions, stats] = await Promise.all([
    api<{ sessionId: string | null; calls: number }[]>('/api/sessions'),
    api<{ tools: { name: string }[] }>('/api/stats'),
  ])
  const tools = stats.tools.map((t) => t.name).sort()
  const colour = (name: string) =>
    PALETTE[Math.max(0, tools.indexOf(name)) % PALETTE.length] ?? '#57606a'
  const form = h(
    'form',
    { class: 'filters', 'aria-label': 'Timeline filters' },
    h(
      'label',
      {},
      'session ',
      h(
        'select',
        { name: 'session' },
        h('option', { value: '' }, 'all'),
        sessions
          .filter((s) => s.calls > 0 && s.sessionId !== null)
          .map((s) =>
            h(
              'option',
              { value: s.sessionId ?? '', selected: params.get('session') === s.sessionId },
              s.sessionId ?? '',
            ),
          ),
      ),
    ),
    h(
      'label',
      {},
      ' tool ',
      h(
        'select',
        { name: 'tool' },
        h('option', { value: '' }, 'all'),
        tools.map((t) => h('option', { value: t, selected: params.get('tool') === t }, t)),
      ),
    ),
    h(
      'label',
      {},
      ' ',
      h('input', {
        type: 'checkbox',
        name: 'errors',
        value: '1',
        checked: params.get('errors') === '1',
      }),
      ' errors only',
    ),
    h(
      'label',
      {},
      ' from ',
      h('input', {
        type: 'datetime-local',
        name: 'since',
        step: '0.001',
        value: params.get('since') ?? '',
      }),
    ),
    h(
      'label',
      {},
      ' to ',
      h('input', {
        type: 'datetime-local',
        name: 'until',
        step: '0.001',
        value: params.get('until') ?? '',
      }),
    ),
    ' ',
    h('button', { type: 'submit' }, 'Apply'),
  )
  form.addEventListener('submit', (e) => {
    e.preventDefault()
    const data = new FormData(form)
    const p: Record<string, string> = {}
    for (const [k, v] of data) if (v !== '') p[k] = String(v)
    location.hash = link('timeline', p)
  })
  main.append(h('h2', {}, 'Timeline'), form)
  const toMs = (v: string | null) => (v ? new Date(v).getTime() : undefined)
  const { calls, more } = await api<{ calls: Call[]; more: boolean }>('/api/calls', {
    session: params.get('session'),
    tool: params.get('tool'),
    errors: params.get('errors') === '1' ? 1 : undefined,
    since: toMs(params.get('since')),
    until: toMs(params.get('until')),
    limit: 2000,
  })
  if (calls.length === 0) {
    main.append(h('p', { class: 'hint' }, 'No tool calls match.'))
    return
  }
  const rows = order(calls)
  const t0 = Math.min(...calls.map((c) => c.startedAt))
  const t1 = Math.max(...calls.map((c) => c.startedAt + (c.durationMs ?? 0)))
  const width = Math.max(600, main.clientWidth - 40)
  const x = scaleLinear()
    .domain([0, Math.max(1, t1 - t0)])
    .range([LABEL, width - 10])
  const height = rows.length * ROW + 30
  const svg = select(main)
    .append('svg')
    .attr('class', 'gantt')
    .attr('width', width)
    .attr('height', height)
    .attr('role', 'list')
    .attr('aria-label', `Tool calls: ${calls.length}`)
  svg
    .append('g')
    .attr('class', 'axis')
    .attr('transform', 'translate(0,20)')
    .call(
      axisTop(x)
        .ticks(8)
        .tickFormat((d) => `${Number(d)} ms`),
    )
  let session: string | null | undefined
  rows.forEach(({ call, depth }, i) => {
    const y = 26 + i * ROW
    if (depth === 0 && call.sessionId !== session) {
      session = call.sessionId
      svg
        .append('line')
        .attr('class', 'session-line')
        .attr('x1', 0)
        .attr('x2', width)
        .attr('y1', y - 2)
        .attr('y2', y - 2)
    }
    const g = svg
      .append('g')
      .attr('class', `call${call.status === 'error' ? ' error' : ''}`)
      .attr('role', 'listitem')
      .attr('tabindex', i === 0 ? 0 : -1)
      .attr('data-call-id', call.id)
      .attr(
        'aria-label',
        `#${call.id} ${call.name} ${call.status}, ${ms(call.durationMs)}${call.sessionId ? `, session ${call.sessionId}` : ''}`,
      )
    // The whole row takes the click, not only the bar (a short call's bar is 2 px wide).
    g.append('rect')
      .attr('class', 'hit')
      .attr('x', 0)
      .attr('y', y)
      .attr('width', width)
      .attr('height', ROW)
      .attr('fill', 'transparent')
    g.append('text')
      .attr('class', 'label')
      .attr('x', 4 + depth * 12)
      .attr('y', y + 14)
      .text(
        `${call.sessionId && depth === 0 ? `${call.sessionId} · ` : ''}#${call.id} ${call.name}`.slice(
          0,
          34,
        ),
      )
    const start = x(call.startedAt - t0)
    const w = Math.max(2, x(call.startedAt - t0 + (call.durationMs ?? 0)) - start)
    g.append('rect')
      .attr('class', `bar${call.status === 'error' ? ' bar-error' : ''}`)
      .attr('x', start)
      .attr('y', y + 3)
      .attr('width', w)
      .attr('height', ROW - 6)
      .attr('fill', colour(call.name))
      .attr('data-tool', call.name)
    g.append('title').text(
      `#${call.id} ${call.name} (${call.status}) ${time(call.startedAt)} · ${ms(call.durationMs)}${call.error ? `\n${call.error}` : ''}`,
    )
    g.on('click', () => {
      location.hash = link(`call/${call.id}`)
    })
  })
  const bars = () => [...main.querySelectorAll<SVGGElement>('svg.gantt g.call')]
  main.querySelector('svg.gantt')?.addEventListener('keydown', (e) => {
    const ke = e as KeyboardEvent
    const list = bars()
    const i = list.indexOf(document.activeElement as SVGGElement)
    if (i < 0) return
    const go = (j: number) => {
      const t = list[Math.max(0, Math.min(list.length - 1, j))]
      if (!t) return
      for (const el of list) el.setAttribute('tabindex', '-1')
      t.setAttribute('tabindex', '0')
      t.focus()
    }
    if (ke.key === 'ArrowDown') go(i + 1)
    else if (ke.key === 'ArrowUp') go(i - 1)
    else if (ke.key === 'Home') go(0)
    else if (ke.key === 'End') go(list.length - 1)
    else if (ke.key === 'Enter' || ke.key === ' ') list[i]?.dispatchEvent(new MouseEvent('click'))
    else return
    ke.preventDefault()
  })
  main.append(
    h(
      'p',
      { class: 'legend' },
      tools.map((t) => h('span', { class: 'key' }, swatch(colour(t)), ` ${t} `)),
      h('span', { class: 'key' }, h('span', { class: 'swatch swatch-error' }), ' error'),
      more ? ' · the first 2,000 calls; narrow the filters to see more' : '',
    ),
  )
}

/** One call: parameters, result or error, and its changes, each linking to the file version. */
export async function callView(main: HTMLElement, id: string): Promise<void> {
  try {
    const { call, changes, moreChanges, payloadsCut } = await api<{
      call: Call & { parameters: unknown; result: unknown; metadata: unknown }
      changes: Change[]
      moreChanges: boolean
      payloadsCut: boolean
    }>(`/api/calls/${encodeURIComponent(id)}`)
    main.append(
      h(
        'p',
        {},
        h(
          'a',
          { href: link('timeline', call.sessionId ? { session: call.sessionId } : {}) },
          '← timeline',
        ),
      ),
      h('h2', {}, `#${call.id} ${call.name}`),
      h(
        'p',
        { class: `meta status-${call.status}` },
        `${call.status} · ${time(call.startedAt)} · ${ms(call.durationMs)}${call.sessionId ? ` · session ${call.sessionId}` : ''}${call.parentId ? ` · inside #${call.parentId}` : ''}`,
      ),
      ...(payloadsCut
        ? [
            h(
              'p',
              { class: 'hint' },
              `Parameters, result or error over 1 MiB are shown by their hash and size; agentfs timeline --full prints them whole.`,
            ),
          ]
        : []),
      h('h3', {}, 'Parameters'),
      h('pre', { class: 'json' }, JSON.stringify(call.parameters, null, 2) ?? 'null'),
      ...(call.status === 'error'
        ? [h('h3', {}, 'Error'), h('pre', { class: 'json error-text' }, call.error ?? '')]
        : [
            h('h3', {}, 'Result'),
            h('pre', { class: 'json' }, JSON.stringify(call.result, null, 2) ?? 'null'),
          ]),
      h('h3', {}, `Changes (${changes.length}${moreChanges ? '+' : ''})`),
      changes.length === 0
        ? h('p', { class: 'hint' }, 'This call changed nothing.')
        : h(
            'ul',
            { class: 'changes' },
            changes.map((c) =>
              h(
                'li',
                { 'data-seq': c.seq },
                `tx #${c.txid} ${c.op} `,
                c.path && !c.op.startsWith('kv-') && c.version
                  ? h(
                      'a',
                      {
                        class: 'change-link',
                        href: link('files', {
                          path: c.path2 && c.op === 'rename' ? c.path2 : c.path,
                          version: c.version,
                        }),
                      },
                      c.path,
                    )
                  : (c.path ?? ''),
                c.path2 ? ` → ${c.path2}` : '',
                c.size === null ? '' : ` (${bytes(c.size)})`,
              ),
            ),
          ),
    )
  } catch (error) {
    main.append(errorBox(error))
  }
}
