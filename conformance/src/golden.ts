import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'
import { fileURLToPath } from 'node:url'

/** Folder of the committed golden files (next to `src/` and `dist/`). */
export const GOLDEN_DIR = fileURLToPath(new URL('../goldens/', import.meta.url))

/** Path of a scenario's golden file. */
export function goldenPath(id: string): string {
  return `${GOLDEN_DIR}${id}.txt`
}

/** The committed golden text, or undefined when none exists yet. */
export function readGolden(id: string): string | undefined {
  const path = goldenPath(id)
  return existsSync(path) ? readFileSync(path, 'utf8') : undefined
}

/** Writes a golden file (only the reference driver's test does this, on request). */
export function writeGolden(id: string, text: string): void {
  const path = goldenPath(id)
  mkdirSync(dirname(path), { recursive: true })
  writeFileSync(path, text)
}

/** True when the run was asked to rewrite goldens (`AGENTFS_UPDATE_GOLDENS=1`). */
export function updatingGoldens(): boolean {
  return process.env.AGENTFS_UPDATE_GOLDENS === '1'
}
