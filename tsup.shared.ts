import { defineConfig } from 'tsup'

/** The build of every package: ESM + .d.ts from src/index.ts, against built dependencies. */
export default defineConfig({
  entry: ['src/index.ts'],
  format: ['esm'],
  dts: true,
  sourcemap: true,
  clean: true,
  target: 'node20',
  tsconfig: 'tsconfig.build.json',
})
