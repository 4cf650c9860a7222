// A reader in a process of its own (W16, W17): opens an implementation's existing storage,
// says "ready", waits for "go" on stdin, reads COUNT of W1's files (checking each one's size),
// then prints {"ops", "seconds"} as its last line.
// Usage: node dist/reader-child.js IMPL DIR COUNT FIRST FILES DIRS SEED
import { IMPLEMENTATIONS, type ImplName, openImpl } from './impls.js'

const [name, dir, countText, firstText, filesText, dirsText, seedText] = process.argv.slice(2)
if (!IMPLEMENTATIONS.includes(name as ImplName)) throw new Error(`unknown implementation ${name}`)
const [count, first, files, dirs, seed] = [countText, firstText, filesText, dirsText, seedText].map(
  Number,
) as [number, number, number, number, number]
const impl = await openImpl(name as ImplName, dir!)
process.stdout.write('ready\n')
await new Promise<void>((resolve) => {
  process.stdin.on('data', () => resolve())
  process.stdin.on('end', () => resolve())
})
let x = 12345 + seed * 7919
const start = process.hrtime.bigint()
for (let k = 0; k < count; k++) {
  x = (x * 48271) % 2147483647
  const i = first + (x % (files - first))
  const data = await impl.readFile(`/bench/d${i % dirs}/f${i}.txt`)
  if (data.byteLength !== 1024)
    throw new Error(`reader: /bench/d${i % dirs}/f${i}.txt is ${data.byteLength} bytes`)
}
const seconds = Number(process.hrtime.bigint() - start) / 1e9
await impl.close()
process.stdout.write(`${JSON.stringify({ ops: count, seconds })}\n`)
