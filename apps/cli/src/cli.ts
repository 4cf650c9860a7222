#!/usr/bin/env node
import { createRequire } from 'node:module'
import { CommanderError } from 'commander'
import { buildProgram } from './program.js'

// A reader that stops early (`agentfs fs ls db / | head -1`) closes the pipe: that is normal,
// so the command ends quietly with success instead of a stack trace.
for (const stream of [process.stdout, process.stderr])
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(0)
    throw error
  })

/** The version of the installed package (bundled next to dist/, read at run time). */
const version = (createRequire(import.meta.url)('../package.json') as { version: string }).version

const program = buildProgram(version)

try {
  await program.parseAsync(process.argv)
} catch (error) {
  if (error instanceof CommanderError) process.exit(error.exitCode)
  if ((error as NodeJS.ErrnoException).code === 'EPIPE') process.exit(0)
  // One clear line, no stack trace and no SQL: what went wrong and, where known, what to do.
  const message = (error instanceof Error ? error.message : String(error))
    .replace(/ \[sql: [^\]]*\]/g, '')
    .split('\n')[0]!
  const code = (error as { code?: unknown }).code
  if (process.argv.includes('--json'))
    process.stdout.write(
      `${JSON.stringify({ error: { code: typeof code === 'string' ? code : 'ERROR', message } })}\n`,
    )
  else process.stderr.write(`agentfs: ${message}\n`)
  process.exit(1)
}
