import hljs from 'highlight.js/lib/core'
import bash from 'highlight.js/lib/languages/bash'
import css from 'highlight.js/lib/languages/css'
import javascript from 'highlight.js/lib/languages/javascript'
import json from 'highlight.js/lib/languages/json'
import markdown from 'highlight.js/lib/languages/markdown'
import python from 'highlight.js/lib/languages/python'
import typescript from 'highlight.js/lib/languages/typescript'
import xml from 'highlight.js/lib/languages/xml'
import yaml from 'highlight.js/lib/languages/yaml'
import { api, bytes, diffView, errorBox, h, link, time } from './dom.js'

for (const [name, lang] of Object.entries({
  bash,
  css,
  javascript,
  json,
  markdown,
  python,
  typescript,
  xml,
  yaml,
}))
  hljs.registerLanguage(name, lang)
const EXT: Record<string, string> = {
  sh: 'bash',
  css: 'css',
  js: 'javascript',
  mjs: 'javascript',
  cjs: 'javascript',
  json: 'json',
  md: 'markdown',
  py: 'python',
  ts: 'typescript',
  tsx: 'typescript',
  html: 'xml',
  xml: 'xml',
  svg: 'xml',
  yml: 'yaml',
  yaml: 'yaml',
}

interface Entry {
  name: string
  path: string
  type: string
  size: number | null
}
interface Version {
  version: string | null
  at: number
  op: string
  path: string | null
  size: number | null
  sessionId: string | null
  toolCallId: number | null
  seq: number
  readable: boolean
}
interface FileView {
  path: string
  version: string | null
  current: boolean
  size: number
  mimeType: string
  contentType: string
  text: string | null
  truncated: boolean
}
interface BlameLine {
  line: number
  seq: number | null
  toolCallId: number | null
  sessionId: string | null
  at: number | null
  message: string | null
}

/** The tree: lazy, keyboard-navigable (arrows, Enter, Home/End), like a file manager's. */
function treeNode(entry: Entry, open: (path: string) => void, level: number): HTMLLIElement {
  const dir = entry.type === 'directory'
  const li = h(
    'li',
    {
      role: 'treeitem',
      tabindex: -1,
      'data-path': entry.path,
      'aria-level': level,
      ...(dir ? { 'aria-expanded': 'false' } : {}),
    },
    h(
      'span',
      { class: `node ${entry.type}` },
      dir ? `${entry.name}/` : entry.name,
      entry.size === null ? null : h('span', { class: 'size' }, ` ${bytes(entry.size)}`),
    ),
  )
  li.addEventListener('click', (e) => {
    e.stopPropagation()
    focusItem(li)
    if (dir) void toggle(li, entry.path, open, level)
    else open(entry.path)
  })
  return li
}

async function toggle(li: HTMLElement, path: string, open: (p: string) => void, level: number) {
  if (li.getAttribute('aria-expanded') === 'true') {
    li.setAttribute('aria-expanded', 'false')
    li.querySelector(':scope > ul')?.remove()
    return
  }
  li.setAttribute('aria-expanded', 'true')
  const group = h('ul', { role: 'group' })
  li.append(group)
  await fillDir(group, path, open, level + 1)
}

async function fillDir(
  ul: HTMLElement,
  path: string,
  open: (p: string) => void,
  level: number,
  cursor?: string,
) {
  try {
    const page = await api<{ entries: Entry[]; cursor: string | null }>('/api/tree', {
      path,
      cursor,
      limit: 200,
    })
    for (const e of page.entries) ul.append(treeNode(e, open, level))
    if (page.cursor) {
      const more = h(
        'li',
        { role: 'treeitem', tabindex: -1, class: 'more', 'aria-level': level },
        'more…',
      )
      more.addEventListener('click', (e) => {
        e.stopPropagation()
        more.remove()
        void fillDir(ul, path, open, level, page.cursor ?? undefined)
      })
      ul.append(more)
    }
  } catch (error) {
    ul.append(h('li', {}, errorBox(error)))
  }
}

const items = (tree: HTMLElement) =>
  [...tree.querySelectorAll<HTMLElement>('[role=treeitem]')].filter(
    (el) => el.offsetParent !== null,
  )

function focusItem(li: HTMLElement) {
  const tree = li.closest('[role=tree]')
  for (const el of tree?.querySelectorAll('[role=treeitem][tabindex="0"]') ?? [])
    el.setAttribute('tabindex', '-1')
  li.setAttribute('tabindex', '0')
  li.focus()
}

function treeKeys(tree: HTMLElement) {
  tree.addEventListener('keydown', (e) => {
    const current = document.activeElement as HTMLElement | null
    if (current?.getAttribute('role') !== 'treeitem') return
    const list = items(tree)
    const i = list.indexOf(current)
    const go = (j: number) => {
      const t = list[Math.max(0, Math.min(list.length - 1, j))]
      if (t) focusItem(t)
    }
    const expanded = current.getAttribute('aria-expanded')
    if (e.key === 'ArrowDown') go(i + 1)
    else if (e.key === 'ArrowUp') go(i - 1)
    else if (e.key === 'Home') go(0)
    else if (e.key === 'End') go(list.length - 1)
    else if (e.key === 'ArrowRight' && expanded === 'false') current.click()
    else if (e.key === 'ArrowRight' && expanded === 'true') go(i + 1)
    else if (e.key === 'ArrowLeft' && expanded === 'true') current.click()
    else if (e.key === 'ArrowLeft') {
      const parent = current.parentElement?.closest<HTMLElement>('[role=treeitem]')
      if (parent) focusItem(parent)
    } else if (e.key === 'Enter' || e.key === ' ') current.click()
    else return
    e.preventDefault()
  })
}

/** Files: the tree on the left; the file, its versions, a diff of any two and blame on the right. */
export async function filesView(main: HTMLElement, params: URLSearchParams): Promise<void> {
  const tree = h('ul', { role: 'tree', 'aria-label': 'Files', class: 'tree' })
  const pane = h('section', { class: 'file', 'aria-live': 'polite' })
  main.append(h('div', { class: 'split' }, h('nav', { class: 'tree-pane' }, tree), pane))
  treeKeys(tree)
  const open = (path: string) => {
    location.hash = link('files', { path })
  }
  await fillDir(tree, '/', open, 1)
  const first = tree.querySelector<HTMLElement>('[role=treeitem]')
  first?.setAttribute('tabindex', '0')
  const path = params.get('path')
  if (path) await showFile(pane, path, params)
  else pane.append(h('p', { class: 'hint' }, 'Pick a file in the tree.'))
}

async function showFile(pane: HTMLElement, path: string, params: URLSearchParams) {
  const version = params.get('version') ?? undefined
  try {
    const [file, versions] = await Promise.all([
      api<FileView>('/api/file', { path, version }),
      api<Version[]>('/api/file/history', { path, limit: 200 }),
    ])
    pane.append(
      h('h2', {}, path),
      h(
        'p',
        { class: 'meta' },
        `${bytes(file.size)} · ${file.mimeType} · version ${file.version ?? '—'}${file.current ? '' : ' (an older version)'}`,
      ),
    )
    const readable = versions.filter((v) => v.readable && v.version)
    const options = (selected?: string) => [
      h('option', { value: 'none' }, '(nothing)'),
      ...readable.map((v) =>
        h(
          'option',
          { value: v.version ?? '', selected: v.version === selected },
          `${time(v.at)} ${v.op}${v.toolCallId ? ` · call #${v.toolCallId}` : ''}`,
        ),
      ),
      h('option', { value: 'current', selected: selected === 'current' }, 'now'),
    ]
    const from = h(
      'select',
      { 'aria-label': 'from version', name: 'from' },
      options(params.get('from') ?? readable[1]?.version ?? 'none'),
    )
    const to = h(
      'select',
      { 'aria-label': 'to version', name: 'to' },
      options(params.get('to') ?? 'current'),
    )
    const out = h('div', { class: 'diff-out' })
    const diffButton = h(
      'button',
      {
        type: 'button',
        onclick: async () => {
          out.replaceChildren()
          try {
            const d = await api<{ diff: string }>('/api/file/diff', {
              path,
              from: from.value,
              to: to.value,
            })
            out.append(diffView(d.diff))
          } catch (error) {
            out.append(errorBox(error))
          }
        },
      },
      'Diff',
    )
    const blameOn = params.get('blame') === '1'
    pane.append(
      h(
        'div',
        { class: 'toolbar' },
        h('label', {}, 'from ', from),
        h('label', {}, ' to ', to),
        ' ',
        diffButton,
        ' ',
        h(
          'a',
          {
            href: link('files', {
              path,
              ...(version ? { version } : {}),
              ...(blameOn ? {} : { blame: 1 }),
            }),
          },
          blameOn ? 'hide blame' : 'blame',
        ),
      ),
      out,
    )
    if (params.get('from')) diffButton.click()
    let blame: BlameLine[] | undefined
    if (blameOn && !version)
      blame = (await api<{ lines: BlameLine[] }>('/api/file/blame', { path })).lines
    pane.append(
      file.text === null
        ? h('p', { class: 'hint' }, `binary content (${file.mimeType})`)
        : codeView(path, file.text, blame),
    )
    if (file.truncated) pane.append(h('p', { class: 'hint' }, 'only the first MiB is shown'))
    pane.append(
      h('h3', {}, 'Versions'),
      h(
        'table',
        { class: 'versions' },
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            ['when', 'change', 'size', 'session', 'call', ''].map((t) => h('th', {}, t)),
          ),
        ),
        h(
          'tbody',
          {},
          versions.map((v) =>
            h(
              'tr',
              { 'data-seq': v.seq },
              h('td', {}, time(v.at)),
              h('td', {}, v.op),
              h('td', {}, bytes(v.size)),
              h('td', {}, v.sessionId ?? '—'),
              h(
                'td',
                {},
                v.toolCallId
                  ? h('a', { href: link(`call/${v.toolCallId}`) }, `#${v.toolCallId}`)
                  : '—',
              ),
              h(
                'td',
                {},
                v.readable && v.version
                  ? h(
                      'a',
                      { href: link('files', { path, version: v.version }), class: 'version-link' },
                      'view',
                    )
                  : '',
              ),
            ),
          ),
        ),
      ),
    )
  } catch (error) {
    pane.append(h('h2', {}, path), errorBox(error))
  }
}

function codeView(path: string, text: string, blame?: BlameLine[]): HTMLElement {
  const ext = path.split('.').pop()?.toLowerCase() ?? ''
  const lang = EXT[ext]
  const table = h('table', { class: 'code', 'aria-label': `content of ${path}` })
  const lines = text.split('\n')
  if (lines.at(-1) === '') lines.pop()
  for (const [i, line] of lines.entries()) {
    const code = h('td', { class: 'src' })
    // highlight.js escapes the text it is given; its output is spans around escaped text.
    if (lang && line.length < 5000)
      code.innerHTML = hljs.highlight(line, { language: lang, ignoreIllegals: true }).value
    else code.textContent = line
    const b = blame?.[i]
    table.append(
      h(
        'tr',
        {},
        blame
          ? h(
              'td',
              { class: 'blame', ...(b?.message ? { title: b.message } : {}) },
              b?.toolCallId
                ? h('a', { href: link(`call/${b.toolCallId}`) }, `#${b.toolCallId}`)
                : b?.seq
                  ? `seq ${b.seq}`
                  : '?',
            )
          : null,
        h('td', { class: 'ln' }, i + 1),
        code,
      ),
    )
  }
  return h('div', { class: 'code-wrap' }, table)
}
