import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { AgentFS } from '@agentfs/sdk'
import { type Browser, chromium, type Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type InspectorServer, serveInspector } from '../src/index.js'
import { type Session, scriptedSession } from './session.js'

/**
 * The inspector in a real browser: Debian's Chromium driven by Playwright, against a server
 * this test starts on 127.0.0.1 and stops. Screenshots of each view go to `screenshots/` (or
 * `$AGENTFS_SCREENSHOTS`), not committed.
 */
const CHROMIUM = process.env.AGENTFS_CHROMIUM ?? '/usr/bin/chromium'
// A closed network refuses Chromium's own background connections: these keep it to the page.
const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]
const SHOTS = process.env.AGENTFS_SCREENSHOTS ?? join(import.meta.dirname, '..', 'screenshots')

let dir: string
let session: Session
let agent: AgentFS
let server: InspectorServer
let browser: Browser
let page: Page
const requests: string[] = []
const dialogs: string[] = []
const consoleErrors: string[] = []

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'agentfs-inspector-browser-'))
  session = await scriptedSession(join(dir, 'agent.db'))
  agent = await AgentFS.open({ path: session.path })
  server = await serveInspector(agent)
  browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS })
  page = await browser.newPage({ viewport: { width: 1280, height: 800 } })
  page.on('request', (r) => requests.push(r.url()))
  page.on('console', (m) => {
    if (m.type() === 'error') consoleErrors.push(m.text())
  })
  page.on('dialog', (d) => {
    dialogs.push(d.message())
    void d.dismiss()
  })
  mkdirSync(SHOTS, { recursive: true })
})

afterAll(async () => {
  await browser?.close()
  await server?.close()
  await agent?.close()
  rmSync(dir, { recursive: true, force: true })
})

const view = async (hash: string, ready: string) => {
  await page.evaluate((h) => {
    document.getElementById('main')?.removeAttribute('data-ready')
    location.hash = h
  }, hash)
  await page.waitForSelector(`main[data-ready="${ready}"]`)
}
const shot = (name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true })

describe('the inspector in Chromium', () => {
  it('needs the token, then the printed URL opens the timeline', async () => {
    const denied = await page.goto(`${server.origin}/`)
    expect(denied?.status()).toBe(401)
    expect(await page.textContent('body')).toContain('needs its token')
    await page.goto(server.url)
    expect(page.url()).toBe(`${server.origin}/`)
    await page.waitForSelector('main[data-ready="timeline"]')
  })

  it('draws one bar per call, failed calls styled as errors', async () => {
    const bars = page.locator('svg.gantt g.call')
    expect(await bars.count()).toBe(session.calls)
    const errors = page.locator('svg.gantt g.call.error')
    expect(await errors.count()).toBe(session.errors)
    expect(await page.locator('svg.gantt g.call.error rect.bar-error').count()).toBe(session.errors)
    expect(await page.locator('svg.gantt g.call:not(.error) rect.bar-error').count()).toBe(0)
    const stroke = await errors
      .first()
      .locator('rect.bar')
      .evaluate((el) => getComputedStyle(el).stroke)
    expect(stroke).toBe('rgb(179, 38, 30)')
    // Children sit under their parent, indented.
    const labels = await page.locator('svg.gantt g.call text.label').allTextContents()
    const plan = labels.findIndex((l) => l.endsWith(' plan'))
    expect(labels[plan + 1]).toMatch(/#\d+ think$/)
    expect(labels[plan + 2]).toMatch(/#\d+ think$/)
    await shot('timeline')
  })

  it('filters the timeline to errors', async () => {
    await view('#/timeline?errors=1', 'timeline')
    expect(await page.locator('svg.gantt g.call').count()).toBe(session.errors)
    await view('#/timeline', 'timeline')
  })

  it('moves through the bars with the keyboard and opens one with Enter', async () => {
    const first = page.locator('svg.gantt g.call').first()
    await first.focus()
    await page.keyboard.press('ArrowDown')
    const second = await page.locator('svg.gantt g.call').nth(1).getAttribute('data-call-id')
    expect(await page.evaluate(() => document.activeElement?.getAttribute('data-call-id'))).toBe(
      second,
    )
    await page.keyboard.press('Enter')
    await page.waitForSelector('main[data-ready="call"]')
    expect(page.url()).toContain(`#/call/${second}`)
  })

  it('goes from a bar to its call, to its change, to the file version, and diffs two versions', async () => {
    await view('#/timeline', 'timeline')
    const edit = page.locator('svg.gantt g.call', { hasText: 'edit_file' })
    await edit.locator('rect.bar').click()
    await page.waitForSelector('main[data-ready="call"]')
    expect(await page.textContent('main h2')).toMatch(/#\d+ edit_file/)
    expect(await page.textContent('main pre.json')).toContain('"old": "b = 2"')
    await shot('call')
    await page.click('a.change-link')
    await page.waitForSelector('main[data-ready="files"]')
    const code = await page.locator('table.code').textContent()
    expect(code).toContain('const b = 3')
    expect(page.url()).toContain('version=')
    // The diff of the file's first version against now.
    const from = page.locator('select[name=from] option').nth(2)
    await page.selectOption('select[name=from]', (await from.getAttribute('value'))!)
    await page.selectOption('select[name=to]', 'current')
    await page.click('button:text("Diff")')
    await page.waitForSelector('pre.diff')
    expect(await page.locator('.dl.del').allTextContents()).toContain('-const b = 2')
    expect(await page.locator('.dl.add').allTextContents()).toContain('+const b = 3')
    await shot('diff')
  })

  it('shows blame: the call that last touched each line', async () => {
    await view('#/files?path=%2Fsrc%2Fapp.ts&blame=1', 'files')
    const blame = await page.locator('table.code td.blame').allTextContents()
    expect(blame).toHaveLength(3)
    expect(blame[1]).not.toBe(blame[0])
    expect(blame[0]).toBe(blame[2])
    expect(blame[1]).toMatch(/^#\d+$/)
  })

  it('walks the file tree with the keyboard, lazily', async () => {
    await view('#/files', 'files')
    expect(await page.locator('[role=treeitem][data-path="/src/app.ts"]').count()).toBe(0)
    await page.locator('[role=treeitem]').first().focus()
    const focused = () =>
      page.evaluate(() => document.activeElement?.getAttribute('data-path') ?? null)
    await page.keyboard.press('End')
    expect(await focused()).toBe('/src')
    await page.keyboard.press('ArrowRight')
    await page.waitForSelector('[role=treeitem][data-path="/src/app.ts"]')
    expect(
      await page.locator('[role=treeitem][data-path="/src"]').getAttribute('aria-expanded'),
    ).toBe('true')
    await page.keyboard.press('ArrowDown')
    expect(await focused()).toBe('/src/app.ts')
    await page.keyboard.press('ArrowLeft')
    expect(await focused()).toBe('/src')
    await page.keyboard.press('ArrowUp')
    expect(await focused()).toBe('/secret')
    await page.keyboard.press('Home')
    await page.keyboard.press('ArrowDown')
    await page.keyboard.press('ArrowDown')
    expect(await focused()).toBe('/notes.md')
    await page.keyboard.press('Enter')
    await page.waitForSelector('main[data-ready="files"] table.code')
    expect(page.url()).toContain('path=%2Fnotes.md')
    await shot('files')
  })

  it('shows names and contents an agent wrote as text, never as markup', async () => {
    await view('#/files', 'files')
    const name = '/<img src=x onerror=alert(1)>.md'
    const item = page.locator(`[role=treeitem][data-path="${name}"]`)
    expect(await item.textContent()).toContain('<img src=x onerror=alert(1)>.md')
    await item.click()
    await page.waitForSelector('main[data-ready="files"] table.code')
    expect(await page.locator('table.code').textContent()).toContain('<script>alert(1)</script>')
    expect(await page.locator('main img, main script').count()).toBe(0)
    expect(dialogs).toEqual([])
  })

  it('shows a change made by another process within a second', async () => {
    await view('#/changes', 'changes')
    await page.waitForSelector('.live-status:text("live")')
    const child = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import { AgentFS } from '@agentfs/sdk'
const agent = await AgentFS.open({ path: process.argv[1], sessionId: 'other-process' })
await agent.fs.writeFile('/live.txt', 'hello from elsewhere\\n')
process.stdout.write('written\\n')
await agent.close()`,
        session.path,
      ],
      { cwd: join(import.meta.dirname, '..'), stdio: ['ignore', 'pipe', 'inherit'] },
    )
    const exited = new Promise((resolve) => child.once('exit', resolve))
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (d: Buffer) => {
        if (d.toString().includes('written')) resolve()
      })
      child.on('exit', (code) => code !== 0 && reject(new Error(`writer exited ${code}`)))
    })
    const written = Date.now()
    await page.waitForSelector('table.feed tr.live:has-text("/live.txt")', { timeout: 1000 })
    expect(Date.now() - written).toBeLessThan(1000)
    expect(await page.locator('table.feed tr.live').first().textContent()).toContain(
      'other-process',
    )
    await exited
    await shot('changes')
  })

  it('lists snapshots and diffs two of them', async () => {
    await view('#/snapshots?from=start&to=end', 'snapshots')
    expect(await page.locator('table.snapshots tbody tr').count()).toBe(2)
    const heads = await page.locator('.snap-change h4').allTextContents()
    expect(heads).toContain('A /src/app.ts')
    expect(await page.locator('.snap-change pre.diff .dl.add').count()).toBeGreaterThan(0)
    await shot('snapshots')
  })

  it('shows kv values as formatted JSON with their changes', async () => {
    await view('#/kv?key=memory%3Atask', 'kv')
    expect(await page.locator('section.kv-entry pre.json').textContent()).toBe(
      JSON.stringify({ task: 'count to three', done: false }, null, 2),
    )
    expect(await page.locator('section.kv-entry table.feed tr').count()).toBe(1)
    await shot('kv')
  })

  it('shows per-tool statistics and calls over time', async () => {
    await view('#/stats', 'stats')
    const names = await page.locator('table.stats tbody tr td:first-child').allTextContents()
    expect(new Set(names)).toEqual(
      new Set(['write_file', 'edit_file', 'read_file', 'kv_set', 'plan', 'think']),
    )
    const think = page.locator('table.stats tbody tr', { hasText: 'think' })
    expect(await think.locator('td').nth(3).textContent()).toBe('50.0 %')
    expect(await page.locator('svg.over-time g.bucket').count()).toBeGreaterThan(0)
    await shot('stats')
  })

  it('searches the files from its form, shows what an agent wrote as text, and opens a hit', async () => {
    await view('#/search', 'search')
    await page.fill('form[role=search] input[name=q]', '<script>')
    await page.evaluate(() => document.getElementById('main')?.removeAttribute('data-ready'))
    await page.click('form[role=search] button[type=submit]')
    await page.waitForSelector('main[data-ready="search"] section.search-file')
    expect(page.url()).toContain('#/search?q=%3Cscript%3E')
    const name = '/<img src=x onerror=alert(1)>.md'
    expect(await page.locator('section.search-file h3 a').allTextContents()).toEqual([name])
    expect(await page.locator('ol.search-lines li').allTextContents()).toEqual([
      '1: <script>alert(1)</script>',
    ])
    expect(await page.locator('main img, main script').count()).toBe(0)
    expect(dialogs).toEqual([])
    await shot('search')
    // In any case, under a directory; then the hit opens the file.
    await view('#/search?q=CONST%20B&path=%2Fsrc&ignoreCase=1', 'search')
    expect(await page.locator('p.meta').first().textContent()).toBe('1 line in 1 file')
    await page.locator('section.search-file h3 a').click()
    await page.waitForSelector('main[data-ready="files"] table.code')
    expect(await page.locator('table.code').textContent()).toContain('const b = 3')
  })

  it('keeps text contrast at 4.5:1 or more in every view', async () => {
    const worst: string[] = []
    for (const [hash, ready] of [
      ['#/timeline', 'timeline'],
      ['#/files?path=%2Fsrc%2Fapp.ts&blame=1', 'files'],
      ['#/changes', 'changes'],
      ['#/snapshots?from=start&to=end', 'snapshots'],
      ['#/kv?key=memory%3Atask', 'kv'],
      ['#/stats', 'stats'],
      ['#/search?q=const', 'search'],
    ] as const) {
      await view(hash, ready)
      worst.push(
        ...(await page.evaluate(() => {
          const rgb = (s: string) => (s.match(/[\d.]+/g) ?? []).map(Number)
          const lum = (c: number[]) => {
            const [r, g, b] = c.slice(0, 3).map((v) => {
              const x = v / 255
              return x <= 0.03928 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4
            })
            return 0.2126 * r! + 0.7152 * g! + 0.0722 * b!
          }
          const background = (el: Element | null): number[] => {
            for (let e = el; e; e = e.parentElement) {
              const c = rgb(getComputedStyle(e).backgroundColor)
              if (c.length === 3 || (c[3] ?? 0) > 0) return c
            }
            return [255, 255, 255]
          }
          const bad: string[] = []
          const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT)
          for (let n = walker.nextNode(); n; n = walker.nextNode()) {
            const el = n.parentElement
            if (!el || !n.textContent?.trim() || el.closest('title')) continue
            const style = getComputedStyle(el)
            if (style.visibility === 'hidden' || style.display === 'none') continue
            const fg = rgb(el instanceof SVGElement ? style.fill : style.color)
            const l1 = lum(fg)
            const l2 = lum(background(el))
            const ratio = (Math.max(l1, l2) + 0.05) / (Math.min(l1, l2) + 0.05)
            if (ratio < 4.5)
              bad.push(
                `${location.hash} "${n.textContent.trim().slice(0, 30)}" ${ratio.toFixed(2)}`,
              )
          }
          return bad
        })),
      )
    }
    expect(worst).toEqual([])
  })

  it('breaks none of its own security policy, and logs no errors', () => {
    expect(consoleErrors.filter((m) => !m.includes('401 (Unauthorized)'))).toEqual([])
  })

  it('never makes a request that leaves 127.0.0.1', () => {
    expect(requests.length).toBeGreaterThan(10)
    const elsewhere = requests.filter((u) => new URL(u).host !== new URL(server.origin).host)
    expect(elsewhere).toEqual([])
  })
})
