import { Worker } from 'node:worker_threads'
import { sniffMimeType } from '@agentfs/fs'
import { ToolFailure } from './failure.js'

/** Media types `read_file` recognises by their first bytes (never by the name, which may lie). */
export type MediaType = 'image/png' | 'image/jpeg' | 'image/gif' | 'image/webp' | 'application/pdf'

const MEDIA: ReadonlySet<string> = new Set<MediaType>([
  'image/png',
  'image/jpeg',
  'image/gif',
  'image/webp',
  'application/pdf',
])

/** The media type of `bytes` by its magic number (fs's `sniffMimeType`), when `read_file` shows it. */
export function sniffMedia(bytes: Uint8Array): MediaType | undefined {
  const sniffed = sniffMimeType(bytes)
  return sniffed !== undefined && MEDIA.has(sniffed) ? (sniffed as MediaType) : undefined
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
  // The bytes are copied to the worker, not moved: they came from a FileSystem, which may
  // still hold the buffer (a cache), and a moved buffer is gone from every holder.
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
