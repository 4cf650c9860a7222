import { describe, expect, test } from 'vitest'
import { parseGardenDocument } from '../src/markdown/document.js'
import { checkEdit } from '../src/markdown/guard.js'
import { lintDocument } from '../src/markdown/lint.js'
import { patchSection, sectionBody } from '../src/markdown/patch-section.js'
import { PROFILE } from './fixtures.js'

describe('sections and anchors', () => {
  test('canonical H2 sections with the anchor on the next line, lines of the whole file', () => {
    const doc = parseGardenDocument(PROFILE)
    expect(doc.sections.map((s) => [s.anchor, s.heading, s.start_line, s.end_line])).toEqual([
      ['concerns v1', 'Concerns', 10, 14],
      ['evidence v1', 'Evidence', 15, 19],
      ['change-log v1', 'Change Log', 20, 26],
    ])
    // An anchor inside a code block is text.
    expect(doc.anchors.map((a) => a.anchor)).toEqual([
      'concerns v1',
      'evidence v1',
      'change-log v1',
    ])
    expect(doc.frontmatter?.data).toMatchObject({ id: 'part-42', schema: 3 })
    expect(sectionBody(doc, 'concerns v1')).toBe('Worries about deadlines.\nKeeps lists.\n\n')
  })

  test('a heading without an anchor is a section with none; setext and CRLF files too', () => {
    const crlf = '## A\r\n<!-- @anchor: a v1 -->\r\ntext\r\n\r\nB\r\n---\r\nmore\r\n'
    const doc = parseGardenDocument(crlf)
    expect(doc.sections.map((s) => [s.anchor, s.heading, s.start_line, s.end_line])).toEqual([
      ['a v1', 'A', 1, 4],
      [null, 'B', 5, 7],
    ])
  })
})

describe('patchSection: bytes outside the section stay as they are', () => {
  test('replace and append touch only the section body', () => {
    const replaced = patchSection(PROFILE, 'concerns v1', { replace: 'Fears missing out.' })
    const [before, after] = [PROFILE.split('## Evidence'), replaced.split('## Evidence')]
    expect(after[1]).toBe(before[1])
    expect(replaced).toContain('<!-- @anchor: concerns v1 -->\nFears missing out.\n\n## Evidence')
    expect(replaced.slice(0, replaced.indexOf('Fears'))).toBe(
      PROFILE.slice(0, PROFILE.indexOf('Worries')),
    )

    const appended = patchSection(PROFILE, 'evidence v1', { append: '- "Third" (ev:2026-02-01)' })
    expect(appended).toBe(
      PROFILE.replace('(ev:2026-01-05)\n', '(ev:2026-01-05)\n- "Third" (ev:2026-02-01)\n'),
    )
    // The last section, at the end of the file.
    const log = patchSection(PROFILE, 'change-log v1', { append: '- 2026-02-01: evidence added' })
    expect(log.startsWith(PROFILE.slice(0, PROFILE.indexOf('- 2026-01-05')))).toBe(true)
    expect(checkEdit(PROFILE, log).blocked).toBe(false)
  })

  test('CRLF files keep their line ends; a heading or an anchor in the text is refused', () => {
    const crlf =
      '## A\r\n<!-- @anchor: a v1 -->\r\nold\r\n\r\n## B\r\n<!-- @anchor: b v1 -->\r\nb\r\n'
    expect(patchSection(crlf, 'a v1', { replace: 'new\nlines' })).toBe(
      '## A\r\n<!-- @anchor: a v1 -->\r\nnew\r\nlines\r\n\r\n## B\r\n<!-- @anchor: b v1 -->\r\nb\r\n',
    )
    for (const text of ['## Sneaky', 'x\n# Top', '<!-- @anchor: b v1 -->'])
      expect(() => patchSection(crlf, 'a v1', { replace: text })).toThrow(
        expect.objectContaining({ code: 'BLOCKED' }),
      )
    expect(() => patchSection(crlf, 'zzz v1', { append: 'x' })).toThrow(/anchors: 'a v1', 'b v1'/)
  })
})

describe('hard blocks', () => {
  test('anchors removed or altered, identity values changed: refused with reasons', () => {
    expect(checkEdit(PROFILE, PROFILE.replace('Keeps lists.', 'Keeps notes.')).blocked).toBe(false)
    // Reformatting the frontmatter is not an edit of its values.
    expect(
      checkEdit(PROFILE, PROFILE.replace('participants: [u1]', 'participants:\n  - u1')).blocked,
    ).toBe(false)
    const cases: Array<[string, RegExp]> = [
      [PROFILE.replace('<!-- @anchor: evidence v1 -->\n', ''), /'evidence v1' .* was removed/],
      [
        PROFILE.replace('@anchor: evidence v1', '@anchor: evidence v2'),
        /'evidence v1' .* was removed/,
      ],
      [
        PROFILE.replace('<!-- @anchor: concerns v1 -->', '<!--  @anchor: concerns v1 -->'),
        /'concerns v1' .* was altered/,
      ],
      [
        PROFILE.replace('id: part-42', 'id: part-43'),
        /'id' would change \("part-42" → "part-43"\)/,
      ],
      [PROFILE.replace('schema: 3', "schema: '3'"), /'schema' would change \(3 → "3"\)/],
      [PROFILE.replace('participants: [u1]', 'participants: [u1, u2]'), /'participants'/],
      [PROFILE.replace('user_id: u1\n', ''), /'user_id' would change \("u1" → absent\)/],
      [PROFILE.replace('title: Inner critic', 'title: [unclosed'), /does not parse as YAML/],
    ]
    for (const [after, reason] of cases) {
      const report = checkEdit(PROFILE, after)
      expect(report.blocked).toBe(true)
      expect(report.reasons.join('\n')).toMatch(reason)
    }
    expect(checkEdit(PROFILE, `${PROFILE}<!-- @anchor: concerns v1 -->\n`).reasons).toEqual([
      "hidden anchor 'concerns v1' would appear twice (again on line 27); an anchor names one section",
    ])
    // A new file may set its identity; a new anchor may be added.
    expect(checkEdit(null, PROFILE).blocked).toBe(false)
    expect(checkEdit(PROFILE, `${PROFILE}\n## Hopes\n<!-- @anchor: hopes v1 -->\n`).blocked).toBe(
      false,
    )
  })
})

describe('lint', () => {
  test('caps, non-canonical headings, missing anchors, drift', () => {
    expect(lintDocument(PROFILE)).toMatchObject({
      warnings: [],
      caps_exceeded: false,
      blocked: false,
    })
    const items = Array.from({ length: 8 }, (_, i) => `- item ${i} (ev:${i})`).join('\n')
    const long = Array.from({ length: 301 }, () => 'word').join(' ')
    let text = patchSection(PROFILE, 'evidence v1', { replace: items })
    text = patchSection(text, 'concerns v1', { replace: long })
    text = text.replace('## Concerns', '## concerns ').replace('Keeps', 'x') + '## Loose\ntext  \n'
    const result = lintDocument(text, { before: PROFILE })
    expect(result.diagnostics.map((d) => d.code).sort()).toEqual([
      'evidence-cap',
      'format-drift',
      'heading-not-canonical',
      'heading-without-anchor',
      'section-length',
    ])
    expect(result.caps_exceeded).toBe(true)
    expect(result.blocked).toBe(false)
    expect(result.diagnostics.find((d) => d.code === 'heading-not-canonical')?.fix).toBe(
      '## Concerns',
    )
    expect(lintDocument(PROFILE, { evidenceCap: 1 }).caps_exceeded).toBe(true)
    expect(
      lintDocument(PROFILE, { before: PROFILE.replace('id: part-42', 'id: x') }),
    ).toMatchObject({
      blocked: true,
      blocked_reasons: [expect.stringMatching(/'id' would change/)],
    })
  })
})
