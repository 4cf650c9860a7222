/**
 * The bounds every endpoint keeps, whatever it is asked: a page is at most `maxPage` rows, a
 * file is shown up to `fileBytes`, a diff compares at most `diffBytes` a side within `diffMs`,
 * blame walks at most `blameVersions` versions. A huge database costs a page, never all of it.
 */
export const LIMITS = {
  page: 200,
  maxPage: 2000,
  fileBytes: 1024 * 1024,
  diffBytes: 1024 * 1024,
  diffMs: 2000,
  blameVersions: 50,
  callChanges: 1000,
  kvValueBytes: 256 * 1024,
  sseClients: 32,
  buckets: 60,
  /** A call's parameters, result or error larger than this is shown as its stub. */
  payloadBytes: 1024 * 1024,
  /** A snapshot or branch diff lists at most this many changes … */
  diffChanges: 2000,
  /** … and carries at most this many characters of unified diffs (then paths only). */
  diffChars: 8 * 1024 * 1024,
  /** A search returns at most this many matching lines … */
  searchMatches: 1000,
  /** … reads at most this many bytes of content, within this many milliseconds … */
  searchBytes: 256 * 1024 * 1024,
  searchMs: 5000,
  /** … and shows a line up to this many characters (a window around the match past it). */
  searchLineChars: 240,
} as const

/** An answer other than 200, with the one-line message the client shows. */
export class HttpError extends Error {
  constructor(
    readonly status: 400 | 401 | 403 | 404 | 409 | 413 | 421 | 429,
    message: string,
  ) {
    super(message)
    this.name = 'HttpError'
  }
}

/** An integer query parameter in `min … max`, or `fallback` when absent. */
export function intParam(
  value: string | undefined,
  name: string,
  range: { min: number; max: number; fallback?: number },
): number | undefined {
  if (value === undefined || value === '') return range.fallback
  if (!/^-?\d+$/.test(value)) throw new HttpError(400, `${name} must be an integer, got '${value}'`)
  const n = Number(value)
  if (!Number.isSafeInteger(n) || n < range.min || n > range.max)
    throw new HttpError(400, `${name} must be ${range.min} … ${range.max}, got ${value}`)
  return n
}

/** A yes/no query parameter: `1` or `true`, `0` or `false`; absent is no. */
export function flagParam(value: string | undefined, name: string): boolean {
  if (value === undefined || value === '' || value === '0' || value === 'false') return false
  if (value === '1' || value === 'true') return true
  throw new HttpError(400, `${name} must be 1 or true, 0 or false, got '${value.slice(0, 40)}'`)
}

/** A time query parameter: ms since the epoch or an ISO time. */
export function timeParam(value: string | undefined, name: string): number | undefined {
  if (value === undefined || value === '') return undefined
  const ms = /^\d+(\.\d+)?$/.test(value) ? Number(value) : Date.parse(value)
  if (!Number.isFinite(ms)) throw new HttpError(400, `${name}: cannot read '${value}' as a time`)
  return ms
}

/** A page size: `limit` or the default, at most `LIMITS.maxPage`. */
export const pageParam = (value: string | undefined): number =>
  intParam(value, 'limit', { min: 1, max: LIMITS.maxPage, fallback: LIMITS.page }) as number

/** A required string parameter, at most 4,096 characters. */
export function stringParam(value: string | undefined, name: string): string {
  if (value === undefined || value === '') throw new HttpError(400, `${name} is required`)
  if (value.length > 4096) throw new HttpError(400, `${name} is longer than 4096 characters`)
  return value
}

/** An optional string parameter, at most 4,096 characters. */
export function optionalString(value: string | undefined, name: string): string | undefined {
  return value === undefined || value === '' ? undefined : stringParam(value, name)
}
