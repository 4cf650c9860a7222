import { randomUUID } from 'node:crypto'

/** A point in time as the spec stores it: whole seconds plus nanoseconds (0–999,999,999). */
export interface Timestamp {
  readonly sec: number
  readonly nsec: number
}

/**
 * Where AgentFS reads the time. Inject a fixed clock to make databases byte-for-byte
 * reproducible (the conformance suite does).
 */
export interface Clock {
  /** The current time. MUST NOT go backwards between calls on one clock. */
  now(): Timestamp
}

/** Produces unique ids (session ids, database ids). Inject a seeded source for reproducibility. */
export interface IdSource {
  next(): string
}

const NS_PER_MS = 1_000_000n
const NS_PER_S = 1_000_000_000n

/**
 * The wall clock with nanosecond resolution: `Date.now()` anchored, refined with
 * `process.hrtime.bigint()`, and strictly increasing within the process so two operations never
 * share a timestamp.
 */
export function systemClock(): Clock {
  const anchorWall = BigInt(Date.now()) * NS_PER_MS
  const anchorMono = process.hrtime.bigint()
  let last = 0n
  return {
    now() {
      let ns = anchorWall + (process.hrtime.bigint() - anchorMono)
      if (ns <= last) ns = last + 1n
      last = ns
      return { sec: Number(ns / NS_PER_S), nsec: Number(ns % NS_PER_S) }
    },
  }
}

/**
 * A deterministic clock: starts at `start` (seconds, default 2024-01-01T00:00:00Z) and advances
 * by `stepNs` nanoseconds (default 1 ms) on every call.
 */
export function fixedClock(options: { start?: number; stepNs?: number } = {}): Clock {
  let ns = BigInt(options.start ?? 1_704_067_200) * NS_PER_S
  const step = BigInt(options.stepNs ?? 1_000_000)
  return {
    now() {
      const current = ns
      ns += step
      return { sec: Number(current / NS_PER_S), nsec: Number(current % NS_PER_S) }
    },
  }
}

/** Random UUIDv4 ids. */
export function randomIds(): IdSource {
  return { next: () => randomUUID() }
}

/**
 * Deterministic ids from a seed (xorshift32), formatted like UUIDs so they are drop-in
 * replacements in tests.
 */
export function seededIds(seed = 1): IdSource {
  let state = seed >>> 0 || 1
  const word = () => {
    state ^= state << 13
    state >>>= 0
    state ^= state >>> 17
    state ^= state << 5
    state >>>= 0
    return state.toString(16).padStart(8, '0')
  }
  return {
    next() {
      const a = word()
      const b = word()
      const c = word()
      const d = word()
      return `${a}-${b.slice(0, 4)}-4${b.slice(5, 8)}-8${c.slice(1, 4)}-${c.slice(4)}${d}`
    },
  }
}

/** Milliseconds since the epoch of a {@link Timestamp}, with fractional part. */
export function toMillis(ts: Timestamp): number {
  return ts.sec * 1000 + ts.nsec / 1e6
}
