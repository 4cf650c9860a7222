import { createHash } from 'node:crypto'

/** A deterministic embedder for tests: the shape of the SDK's `embed` option. */
export interface TestEmbedder {
  readonly model: string
  readonly dimensions: number
  readonly batchSize?: number
  embed(texts: readonly string[]): Promise<Float32Array[]>
  /** Texts embedded so far, in order (to check what was sent, and when). */
  readonly calls: string[][]
}

/**
 * Bag of words hashed into `dimensions` buckets: texts that share words point the same way.
 * `synonyms` sends words to one bucket (`car` and `automobile`), so a test can show a match
 * that word search cannot make. Same input, same vector, on every machine.
 */
export function bagOfWordsEmbedder(
  options: { dimensions?: number; model?: string; synonyms?: readonly (readonly string[])[] } = {},
): TestEmbedder {
  const dimensions = options.dimensions ?? 64
  const canonical = new Map<string, string>()
  for (const group of options.synonyms ?? []) for (const w of group) canonical.set(w, group[0]!)
  const bucket = (word: string) =>
    createHash('sha256')
      .update(canonical.get(word) ?? word)
      .digest()
      .readUInt32BE(0) % dimensions
  const calls: string[][] = []
  return {
    model: options.model ?? `bag-of-words-${dimensions}`,
    dimensions,
    calls,
    async embed(texts) {
      calls.push([...texts])
      return texts.map((text) => {
        const v = new Float32Array(dimensions)
        for (const word of text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) v[bucket(word)]! += 1
        return v
      })
    },
  }
}
