import { spawn } from 'node:child_process'
import { mkdir, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'

const here = fileURLToPath(new URL('.', import.meta.url))

/** Bundles a child script of fixtures/ from TypeScript source (workspace packages from source). */
export async function bundleChild(
  name: string,
): Promise<{ script: string; dispose(): Promise<void> }> {
  const outDir = join(here, '..', '.tmp')
  await mkdir(outDir, { recursive: true })
  const script = join(outDir, `${name}-${process.pid}.mjs`)
  await build({
    entryPoints: [join(here, 'fixtures', `${name}.ts`)],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outfile: script,
    conditions: ['@agentfs/source'],
    external: ['better-sqlite3', '@libsql/client'],
    logLevel: 'silent',
  })
  return { script, dispose: () => rm(script, { force: true }) }
}

/** Runs a Node script to its end: exit code and everything it printed. */
export function runNode(
  script: string,
  args: string[],
): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    child.stdout.on('data', (d) => {
      out += d
    })
    child.stderr.on('data', (d) => {
      out += d
    })
    child.on('close', (code) => resolve({ code, out }))
  })
}

/**
 * Starts `script` with `args`, waits until it prints (it is working), kills it with SIGKILL
 * after `delayMs`; resolves with its stderr, rejects if it exits on its own.
 */
export function runAndKill(script: string, args: string[], delayMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
    let err = ''
    proc.stderr.on('data', (d) => {
      err += d
    })
    // A writer that never says it is working is killed too, and the round fails.
    const silent = setTimeout(() => proc.kill('SIGKILL'), 120_000)
    let working = false
    proc.stdout.once('data', () => {
      working = true
      clearTimeout(silent)
      setTimeout(() => proc.kill('SIGKILL'), delayMs)
    })
    proc.on('exit', (code, signal) => {
      clearTimeout(silent)
      if (signal === 'SIGKILL' && working) resolve(err)
      else
        reject(
          new Error(`writer ${working ? `exited (${code})` : 'never started writing'}: ${err}`),
        )
    })
  })
}
