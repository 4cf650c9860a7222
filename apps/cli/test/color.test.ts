import { afterEach, expect, test } from 'vitest'
import { colorDiff, useColor } from '../src/commands.js'

const saved = { NO_COLOR: process.env.NO_COLOR, FORCE_COLOR: process.env.FORCE_COLOR }
afterEach(() => {
  for (const [k, v] of Object.entries(saved))
    if (v === undefined) delete process.env[k]
    else process.env[k] = v
})

const tty = { isTTY: true } as NodeJS.WriteStream
const pipe = { isTTY: false } as NodeJS.WriteStream

test('diffs are coloured on a terminal, never with NO_COLOR, and plain in pipes', () => {
  delete process.env.NO_COLOR
  delete process.env.FORCE_COLOR
  expect(useColor(tty)).toBe(true)
  expect(useColor(pipe)).toBe(false)
  process.env.NO_COLOR = '1'
  expect(useColor(tty)).toBe(false)
  delete process.env.NO_COLOR
  process.env.FORCE_COLOR = '1'
  expect(useColor(pipe)).toBe(true)
  const diff = '--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\n same'
  expect(colorDiff(diff, false)).toBe(diff)
  const painted = colorDiff(diff, true).split('\n')
  expect(painted[3]).toBe('\x1b[31m-old\x1b[0m')
  expect(painted[4]).toBe('\x1b[32m+new\x1b[0m')
  expect(painted[5]).toBe(' same')
})
