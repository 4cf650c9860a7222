/** A small DOM builder: text is always set as text, never parsed as HTML. */
export type Child = Node | string | number | null | undefined | false
type Attrs = Record<string, string | number | boolean | undefined | ((e: Event) => void)>

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: (Child | Child[])[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag)
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) continue
    if (typeof v === 'function') el.addEventListener(k.replace(/^on/, ''), v)
    else el.setAttribute(k, v === true ? '' : String(v))
  }
  append(el, children)
  return el
}

export function append(el: Element, children: (Child | Child[])[]): void {
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue
    el.append(typeof c === 'number' ? String(c) : c)
  }
}

/** GET a JSON endpoint of the inspector's API (the cookie carries the token). */
export async function api<T>(path: string, params: Record<string, unknown> = {}): Promise<T> {
  const url = new URL(path, location.origin)
  for (const [k, v] of Object.entries(params))
    if (v !== undefined && v !== null && v !== '' && v !== false) url.searchParams.set(k, String(v))
  const res = await fetch(url, { credentials: 'same-origin' })
  const body = await res.json()
  if (!res.ok) throw new Error(body.error ?? res.statusText)
  return body as T
}

export const time = (ms: number | null) =>
  ms === null ? '—' : new Date(ms).toISOString().replace('T', ' ').replace('Z', '')
export const bytes = (n: number | null) =>
  n === null
    ? '—'
    : n < 1024
      ? `${n} B`
      : n < 1024 ** 2
        ? `${(n / 1024).toFixed(1)} KiB`
        : `${(n / 1024 ** 2).toFixed(1)} MiB`
export const ms = (n: number | null) =>
  n === null ? '—' : n < 10 ? `${n.toFixed(2)} ms` : `${n.toFixed(0)} ms`

/** The hash route: `#/view?x=1` → { view, params }. */
export function route(): { view: string; params: URLSearchParams; rest: string[] } {
  const [path = '', query = ''] = location.hash.replace(/^#\/?/, '').split('?')
  const [first, ...rest] = path.split('/')
  return {
    view: first || 'timeline',
    params: new URLSearchParams(query),
    rest: rest.map(decodeURIComponent),
  }
}

export function link(
  view: string,
  params: Record<string, string | number | undefined> = {},
): string {
  const q = new URLSearchParams()
  for (const [k, v] of Object.entries(params)) if (v !== undefined) q.set(k, String(v))
  const s = q.toString()
  return `#/${view}${s ? `?${s}` : ''}`
}

/** A unified diff as lines coloured by kind. */
export function diffView(diff: string): HTMLElement {
  const pre = h('pre', { class: 'diff', 'aria-label': 'diff' })
  for (const line of diff.split('\n')) {
    const kind =
      line.startsWith('+++') ||
      line.startsWith('---') ||
      line.startsWith('Index:') ||
      line.startsWith('====')
        ? 'meta'
        : line.startsWith('@@')
          ? 'hunk'
          : line.startsWith('+')
            ? 'add'
            : line.startsWith('-')
              ? 'del'
              : 'ctx'
    pre.append(h('span', { class: `dl ${kind}` }, line), '\n')
  }
  return pre
}

export function errorBox(error: unknown): HTMLElement {
  return h('p', { class: 'error', role: 'alert' }, (error as Error).message ?? String(error))
}

/** Colour of a tool by its index (palette with text contrast on white). */
export const PALETTE = [
  '#1f5fbf',
  '#1a7f37',
  '#8250df',
  '#9a6700',
  '#0e7490',
  '#bf3989',
  '#57606a',
  '#6639ba',
]
