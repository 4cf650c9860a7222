import { pdf, png } from '@agentfs/test-kit'
import { describe, expect, test } from 'vitest'
import { sniffMedia } from '../src/media.js'
import { openTools } from './open-tools.js'

const setup = (limits = {}) => openTools({ limits })

describe('read_file of images and PDFs', () => {
  test('an image comes back as an image part with its type, size and hash; too large is described', async () => {
    const { agent, run } = await setup({ maxImageBytes: 10_000 })
    const image = png(4, 3)
    await agent.fs.writeFile('/shot.bin', image)
    const out = await run('read_file', { path: '/shot.bin' })
    expect(out.images).toEqual([{ data: image.toString('base64'), mediaType: 'image/png' }])
    expect(out.text).toMatch(/^\/shot\.bin is an image \(image\/png, \d+ bytes\), attached/)
    expect(out.data).toMatchObject({ mediaType: 'image/png', size: image.length })
    const { agent: other, run: strict } = await setup({ maxImageBytes: image.length - 1 })
    await other.fs.writeFile('/shot.png', image)
    const large = await strict('read_file', { path: '/shot.png' })
    expect(large.images).toBeUndefined()
    expect(large.text).toContain(`larger than the ${image.length - 1} bytes`)
    // The name does not decide: text named .png is read as text, PNG bytes named .txt as an image.
    await agent.fs.writeFile('/fake.png', 'just text\n')
    expect((await run('read_file', { path: '/fake.png' })).text).toContain('1\tjust text')
  })

  test('a PDF returns its text by pages with the page count, readable by ranges', async () => {
    const { agent, run } = await setup()
    await agent.fs.writeFile('/doc.pdf', pdf(['Hello from page one', 'Second page text']))
    const out = await run('read_file', { path: '/doc.pdf' })
    expect(out.isError, out.text).toBeFalsy()
    expect(out.text).toMatch(/^\/doc\.pdf is a PDF of 2 page\(s\)/)
    expect(out.text).toContain('--- page 1 of 2 ---')
    expect(out.text).toContain('Hello from page one')
    expect(out.text).toContain('--- page 2 of 2 ---')
    expect(out.text).toContain('Second page text')
    expect(out.data).toMatchObject({ mediaType: 'application/pdf', pages: 2 })
    const second = await run('read_file', { path: '/doc.pdf', offset: 3 })
    expect(second.text).not.toContain('Hello from page one')
    expect(second.text).toContain('Second page text')
  })

  test('a broken PDF is refused with a one-line error, the process unharmed', async () => {
    const { agent, run } = await setup()
    await agent.fs.writeFile('/bad.pdf', Buffer.from('%PDF-1.7\nthis is not a pdf at all'))
    const out = await run('read_file', { path: '/bad.pdf' })
    expect(out).toMatchObject({ isError: true, code: 'EPDF' })
    expect(out.text).toMatch(/^Error: the PDF's text could not be read: /)
    expect((await run('exists', { path: '/bad.pdf' })).text).toBe('true (file)')
  })

  test('a PDF larger than the budget is refused before parsing', async () => {
    const { agent, run } = await setup({ maxPdfBytes: 100 })
    await agent.fs.writeFile('/doc.pdf', pdf(['some text']))
    expect(await run('read_file', { path: '/doc.pdf' })).toMatchObject({
      isError: true,
      code: 'EFBIG',
    })
  })

  test('magic numbers decide the type', () => {
    expect(sniffMedia(png(1, 1))).toBe('image/png')
    expect(sniffMedia(pdf(['x']))).toBe('application/pdf')
    expect(sniffMedia(Buffer.from([0xff, 0xd8, 0xff, 0xe0]))).toBe('image/jpeg')
    expect(sniffMedia(Buffer.from('GIF89a'))).toBe('image/gif')
    expect(sniffMedia(Buffer.from('RIFF\0\0\0\0WEBPVP8 '))).toBe('image/webp')
    expect(sniffMedia(Buffer.from('hello'))).toBeUndefined()
  })
})
