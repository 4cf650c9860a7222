// The text files the search benches index: 16 lines of 10 words each (about 1 KiB), drawn
// Zipf-like from a 5,000-word vocabulary as prose is, from a fixed seed (the same every run).

export const VOCABULARY = Array.from({ length: 5000 }, (_, i) => `w${(i * 7919) % 100_003}`)

/** `count` files' texts, the same on every run. */
export function searchCorpus(count: number): string[] {
  let seed = 0x2545f491
  const random = () => {
    seed ^= seed << 13
    seed ^= seed >>> 17
    seed ^= seed << 5
    return (seed >>> 0) / 2 ** 32
  }
  const word = () => VOCABULARY[Math.floor(random() ** 3 * VOCABULARY.length)]!
  return Array.from({ length: count }, () => {
    const lines: string[] = []
    for (let l = 0; l < 16; l++) lines.push(Array.from({ length: 10 }, word).join(' '))
    return `${lines.join('\n')}\n`
  })
}

/** The median of some timings. */
export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

/** How long `fn` takes, in ms. */
export async function ms(fn: () => Promise<unknown>): Promise<number> {
  const start = process.hrtime.bigint()
  await fn()
  return Number(process.hrtime.bigint() - start) / 1e6
}
