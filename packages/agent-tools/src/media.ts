import { Worker } from 'node:worker_threads'
import { ToolFailure } from './failure.js'

/** Media types `read_file` recognises by their first bytes (never by the name, which may lie). */
export type MediaType = 'image/png' | 'image/jpeg' | 'image/gif' | 'image/webp' | 'application/pdf'

const startsWith = (bytes: Uint8Array, prefix: readonly (number | null)[]) =>
  bytes.length >= prefix.length && prefix.every((b, i) => b === null || bytes[i] === b)

/** The media type of `bytes` by its magic number, or undefined. */
export function sniffMedia(bytes: Uint8Array): MediaType | undefined {
  if (startsWith(bytes, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'image/png'
  if (startsWith(bytes, [0xff, 0xd8, 0xff])) return 'image/jpeg'
  if (startsWith(bytes, [0x47, 0x49, 0x46, 0x38])) return 'image/gif'
  if (startsWith(bytes, [0x52, 0x49, 0x46, 0x46, null, null, null, null, 0x57, 0x45, 0x42, 0x50]))
    return 'image/webp'
  if (startsWith(bytes, [0x25, 0x50, 0x44, 0x46, 0x2d])) return 'application/pdf'
  return undefined
}

/** The text of a PDF, page by page. */
export interface PdfText {
  readonly pages: number
  readonly text: readonly string[]
}

/** How long and how much memory the PDF parser may take (it runs on input an agent wrote). */
export interface PdfLimits {
  readonly timeoutMs: number
  readonly maxHeapMb: number
}

// The parser runs in a worker thread: a hostile PDF that loops or balloons is stopped at the
// time limit or the heap limit, and the agent's process carries on.
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads')
import(workerData.url)
  .then(({ extractText }) => extractText(new Uint8Array(workerData.bytes), { mergePages: false }))
  .then((r) => parentPort.postMessage({ pages: r.totalPages, text: r.text }))
  .catch((e) => parentPort.postMessage({ error: String(e && e.message ? e.message : e) }))
`

let parserUrl: string | undefined

/**
 * Extracts a PDF's text with unpdf (PDF.js) in a worker with `limits`; refuses (EPDF) a PDF it
 * cannot read, or that takes longer or more memory than allowed.
 */
export async function pdfText(bytes: Uint8Array, limits: PdfLimits): Promise<PdfText> {
  parserUrl ??= import.meta.resolve('unpdf')
  const worker = new Worker(WORKER, {
    eval: true,
    workerData: { url: parserUrl, bytes },
    resourceLimits: { maxOldGenerationSizeMb: limits.maxHeapMb },
  })
  try {
    return await new Promise<PdfText>((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            new ToolFailure(
              'EPDF',
              `Error: reading the PDF's text took longer than ${limits.timeoutMs} ms and was stopped.`,
            ),
          ),
        limits.timeoutMs,
      )
      const fail = (why: string) => {
        clearTimeout(timer)
        reject(new ToolFailure('EPDF', `Error: the PDF's text could not be read: ${why}.`))
      }
      worker.once('message', (m: { pages?: number; text?: string[]; error?: string }) => {
        clearTimeout(timer)
        if (m.error !== undefined || !Array.isArray(m.text) || typeof m.pages !== 'number')
          fail(m.error ?? 'the parser returned nothing')
        else resolve({ pages: m.pages, text: m.text })
      })
      worker.once('error', (e) => fail(e.message))
      worker.once('exit', (code) => fail(`the parser stopped (exit code ${code})`))
    })
  } finally {
    await worker.terminate()
  }
}
