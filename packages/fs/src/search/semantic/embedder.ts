import { AgentFsError } from '@agentfs/core'

/**
 * What turns text into vectors for semantic search: your model, called off the write path in
 * batches. No model is bundled.
 */
export interface Embedder {
  /**
   * Names the model (and its version): vectors are kept per model, and only the current
   * model's are compared, so a new name re-embeds every file.
   */
  readonly model: string
  /** The length of every vector `embed` returns. */
  readonly dimensions: number
  /** One vector per text, in order. */
  embed(texts: readonly string[]): Promise<readonly ArrayLike<number>[]>
  /** Texts per call of `embed` (default 32, at most 1,024). */
  readonly batchSize?: number
}

/** The largest `dimensions` accepted (vectors are kept as float32s: 32 KiB each). */
export const MAX_DIMENSIONS = 8192
const MAX_MODEL_NAME = 200

/** The embedder, checked once: a clear error at open instead of a failure in the background. */
export function checkEmbedder(embedder: Embedder): Embedder {
  if (typeof embedder !== 'object' || embedder === null || typeof embedder.embed !== 'function')
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      'embed must be { model, dimensions, embed(texts) } (embed returns one vector per text)',
    )
  if (
    typeof embedder.model !== 'string' ||
    embedder.model.length === 0 ||
    embedder.model.length > MAX_MODEL_NAME
  )
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      `embed.model must name the model in 1 to ${MAX_MODEL_NAME} characters`,
    )
  if (
    !Number.isSafeInteger(embedder.dimensions) ||
    embedder.dimensions < 1 ||
    embedder.dimensions > MAX_DIMENSIONS
  )
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      `embed.dimensions must be a whole number from 1 to ${MAX_DIMENSIONS}`,
    )
  const batch = embedder.batchSize ?? 32
  if (!Number.isSafeInteger(batch) || batch < 1 || batch > 1024)
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      'embed.batchSize must be a whole number from 1 to 1024',
    )
  return embedder
}

/** Vectors for `texts` from the embedder, in batches, each checked (length, finite numbers). */
export async function embedAll(
  embedder: Embedder,
  texts: readonly string[],
): Promise<Float32Array[]> {
  const batch = embedder.batchSize ?? 32
  const out: Float32Array[] = []
  for (let i = 0; i < texts.length; i += batch) {
    const part = texts.slice(i, i + batch)
    const vectors = await embedder.embed(part)
    if (!Array.isArray(vectors) || vectors.length !== part.length)
      throw new AgentFsError(
        'INVALID_ARGUMENT',
        `the embedder ${embedder.model} returned ${Array.isArray(vectors) ? vectors.length : 'no array of'} vectors for ${part.length} texts; it must return one per text`,
      )
    for (const vector of vectors) out.push(checkVector(vector, embedder))
  }
  return out
}

function checkVector(vector: ArrayLike<number>, embedder: Embedder): Float32Array {
  if (vector === null || typeof vector !== 'object' || vector.length !== embedder.dimensions)
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      `the embedder ${embedder.model} returned a vector of ${vector?.length ?? 'no'} numbers; its dimensions say ${embedder.dimensions}`,
    )
  const out = Float32Array.from(vector)
  for (const x of out)
    if (!Number.isFinite(x))
      throw new AgentFsError(
        'INVALID_ARGUMENT',
        `the embedder ${embedder.model} returned a vector holding ${x}; vectors hold finite numbers`,
      )
  return out
}

/** A vector as stored: little-endian float32s. */
export function vectorBlob(vector: Float32Array): Uint8Array {
  const bytes = new Uint8Array(vector.length * 4)
  const view = new DataView(bytes.buffer)
  for (let i = 0; i < vector.length; i++) view.setFloat32(i * 4, vector[i]!, true)
  return bytes
}

/**
 * A stored vector, or undefined when the row cannot be one of `dimensions` numbers (a damaged or
 * crafted row is left out, never the reason a search fails).
 */
export function readVector(blob: unknown, dimensions: number): Float32Array | undefined {
  if (!(blob instanceof Uint8Array) || blob.byteLength !== dimensions * 4) return undefined
  let out: Float32Array
  if (LITTLE_ENDIAN) {
    // One copy into an aligned buffer, read in place.
    out = new Float32Array(dimensions)
    new Uint8Array(out.buffer).set(blob)
  } else {
    const view = new DataView(blob.buffer, blob.byteOffset, blob.byteLength)
    out = new Float32Array(dimensions)
    for (let i = 0; i < dimensions; i++) out[i] = view.getFloat32(i * 4, true)
  }
  for (let i = 0; i < dimensions; i++) if (!Number.isFinite(out[i]!)) return undefined
  return out
}

const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1

/** The vector's length, for cosine similarity. */
export function norm(vector: Float32Array): number {
  let sum = 0
  for (let i = 0; i < vector.length; i++) sum += vector[i]! * vector[i]!
  return Math.sqrt(sum)
}

/** Cosine similarity; undefined when either vector is zero (no direction to compare). */
export function cosine(a: Float32Array, aNorm: number, b: Float32Array): number | undefined {
  let dot = 0
  let bb = 0
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!
    bb += b[i]! * b[i]!
  }
  if (aNorm === 0 || bb === 0) return undefined
  return dot / (aNorm * Math.sqrt(bb))
}
