import { api, errorBox, h, route } from './dom.js'
import { filesView } from './files.js'
import { searchView } from './search.js'
import { callView, timelineView } from './timeline.js'
import { changesView, kvView, snapshotsView, statsView, stopLive } from './views.js'

const main = document.getElementById('main') as HTMLElement

async function render(): Promise<void> {
  const { view, params, rest } = route()
  stopLive()
  main.replaceChildren()
  for (const a of document.querySelectorAll('nav a'))
    if (
      a.getAttribute('data-view') === view ||
      (view === 'call' && a.getAttribute('data-view') === 'timeline')
    )
      a.setAttribute('aria-current', 'page')
    else a.removeAttribute('aria-current')
  document.title = `AgentFS inspector · ${view}`
  try {
    if (view === 'files') await filesView(main, params)
    else if (view === 'call') await callView(main, rest[0] ?? '')
    else if (view === 'changes') await changesView(main, params)
    else if (view === 'snapshots') await snapshotsView(main, params)
    else if (view === 'kv') await kvView(main, params)
    else if (view === 'stats') await statsView(main)
    else if (view === 'search') await searchView(main, params)
    else await timelineView(main, params)
  } catch (error) {
    main.append(errorBox(error))
  }
  main.setAttribute('data-ready', view)
}

window.addEventListener('hashchange', () => void render())
void api<{ path: string | null }>('/api/info').then((info) => {
  const db = document.getElementById('db')
  if (db) db.replaceChildren(h('span', { class: 'path' }, info.path ?? '(in memory)'))
})
void render()
