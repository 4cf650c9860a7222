import { cpSync } from 'node:fs'
import { defineConfig, type Options } from 'tsup'
import shared from '../../tsup.shared.js'

/**
 * Two builds: the server (ESM + .d.ts, like every package) and the web app, one self-contained
 * browser bundle with its libraries (charts, highlighting) inside, served from the package: no
 * CDN at run time, so the inspector works offline.
 */
export default defineConfig([
  // Both builds write into dist/ at once: neither may clean it under the other.
  { ...(shared as Options), clean: false },
  {
    entry: { 'ui/app': 'src/ui/app.ts' },
    format: ['iife'],
    platform: 'browser',
    target: 'es2022',
    minify: true,
    sourcemap: false,
    clean: false,
    dts: false,
    noExternal: [/.*/],
    tsconfig: 'src/ui/tsconfig.json',
    outExtension: () => ({ js: '.js' }),
    onSuccess: async () => {
      cpSync('src/ui/index.html', 'dist/ui/index.html')
      cpSync('src/ui/app.css', 'dist/ui/app.css')
    },
  },
])
