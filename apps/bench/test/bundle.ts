import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'

const src = fileURLToPath(new URL('../src/', import.meta.url))

/** Bundles bench entry points (from src/) into `outdir` from the sources, as the tests run them. */
export async function bundleBench(entries: readonly string[], outdir: string): Promise<void> {
  await build({
    entryPoints: entries.map((f) => join(src, f)),
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outdir,
    conditions: ['@agentfs/source'],
    external: ['better-sqlite3', '@libsql/client', 'agentfs-sdk'],
    banner: {
      js: "import { createRequire as bannerRequire } from 'node:module'; const require = bannerRequire(import.meta.url);",
    },
    logLevel: 'silent',
  })
}
