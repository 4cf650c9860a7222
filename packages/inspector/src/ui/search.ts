import { api, errorBox, h, link } from './dom.js'

interface SearchMatch {
  path: string
  line: number
  text: string
  cut: boolean
}

/**
 * Search: the lines of the files under a directory that hold a text as written (never a
 * pattern), grouped by file, each file a link to its view. Reads what is stored, writes nothing.
 */
export async function searchView(main: HTMLElement, params: URLSearchParams): Promise<void> {
  const q = params.get('q') ?? ''
  const path = params.get('path') ?? '/'
  const ignoreCase = params.get('ignoreCase') === '1'
  const form = h(
    'form',
    { class: 'filters', role: 'search', 'aria-label': 'Search the files' },
    h('label', {}, 'text ', h('input', { name: 'q', value: q, type: 'search', required: true })),
    h('label', {}, 'under ', h('input', { name: 'path', value: path })),
    h(
      'label',
      {},
      h('input', { name: 'ignoreCase', type: 'checkbox', value: '1', checked: ignoreCase }),
      ' any case',
    ),
    h('button', { type: 'submit' }, 'Search'),
  )
  form.addEventListener('submit', (e) => {
    e.preventDefault()
    const data = new FormData(form)
    location.hash = link('search', {
      q: String(data.get('q') ?? ''),
      path: String(data.get('path') ?? '') || undefined,
      ignoreCase: data.get('ignoreCase') ? 1 : undefined,
    })
  })
  main.append(h('h2', {}, 'Search'), form)
  if (!q) {
    main.append(h('p', { class: 'hint' }, 'The lines of the files that hold a text, as written.'))
    return
  }
  try {
    const found = await api<{ matches: SearchMatch[]; truncated: boolean }>('/api/search', {
      q,
      path,
      ignoreCase: ignoreCase ? 1 : undefined,
      limit: 500,
    })
    const files = new Map<string, SearchMatch[]>()
    for (const m of found.matches) {
      const lines = files.get(m.path)
      if (lines) lines.push(m)
      else files.set(m.path, [m])
    }
    main.append(
      h(
        'p',
        { class: 'meta', 'aria-live': 'polite' },
        found.matches.length === 0
          ? 'No line holds it.'
          : `${found.matches.length} line${found.matches.length === 1 ? '' : 's'} in ${files.size} file${files.size === 1 ? '' : 's'}${found.truncated ? ' (the first ones: narrow the directory for the rest)' : ''}`,
      ),
      ...[...files].map(([file, lines]) =>
        h(
          'section',
          { class: 'search-file' },
          h('h3', {}, h('a', { href: link('files', { path: file }) }, file)),
          h(
            'ol',
            { class: 'search-lines' },
            lines.map((m) =>
              h(
                'li',
                {},
                h('span', { class: 'meta' }, `${m.line}: `),
                h('code', {}, m.cut ? `…${m.text}…` : m.text),
              ),
            ),
          ),
        ),
      ),
    )
  } catch (error) {
    main.append(errorBox(error))
  }
}
