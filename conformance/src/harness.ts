import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  type AgentDatabase,
  type Compression,
  type Driver,
  fixedClock,
  type GuardedDriver,
  guardDriver,
  openDatabase,
  seededIds,
} from '@agentfs/core'
import { canonicalDump, stableReplacer } from './dump.js'

/** What a driver factory gets. */
export interface DriverContext {
  /** A fresh empty directory for this test; removed afterwards. */
  readonly tempDir: string
  /**
   * Which database in this test (0 for the first). Factories of file-based drivers SHOULD put
   * database `n` at a stable path inside `tempDir`, so a second driver with the same `slot`
   * opens the same file (used to test locking between connections).
   */
  readonly slot: number
}

/** Creates a driver for a fresh database. */
export type CreateDriver = (context: DriverContext) => Driver | Promise<Driver>

/** Everything a scenario can use. The database is opened with a fixed clock and seeded ids. */
export interface ScenarioContext {
  readonly db: AgentDatabase
  /** Another fresh database on the same driver (e.g. an overlay's base); not dumped. */
  readonly openDatabase: () => Promise<AgentDatabase>
}

/**
 * A scenario: typed data plus a `run` function. Its return value (observations) and the
 * database's canonical dump afterwards must equal the committed golden file.
 */
export interface Scenario {
  /** `group/name`; also the golden file's path under `goldens/`. */
  readonly id: string
  readonly description: string
  /** Chunk size for the new database. */
  readonly chunkSize?: number
  /** SQL run on the empty database before it is opened (e.g. an older layout to migrate). */
  readonly setupScript?: string
  /** Does the work; returns JSON-serialisable observations. */
  run(context: ScenarioContext): Promise<unknown>
}

/** Result of running one scenario. */
export interface ScenarioOutcome {
  readonly observations: string
  readonly dump: string
  /** Observations and dump, as stored in the golden file. */
  readonly text: string
}

/** Serialises observations stably (bigints, bytes). */
export function formatObservations(value: unknown): string {
  return JSON.stringify(value ?? null, stableReplacer, 2)
}

/** Per-test resources: temp dirs and drivers, released by `cleanup()`. */
export class TestResources {
  readonly #dirs: string[] = []
  readonly #closers: Array<() => Promise<void>> = []
  readonly #createDriver: CreateDriver
  readonly #compression: Compression | undefined
  #slot = 0

  /** `compression`: how new databases compress file content (see `ConformanceOptions`). */
  constructor(createDriver: CreateDriver, compression?: Compression) {
    this.#createDriver = createDriver
    this.#compression = compression
  }

  async tempDir(): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), 'agentfs-conformance-'))
    this.#dirs.push(dir)
    return dir
  }

  /** A new driver on a new database (or on `slot`'s database in `tempDir`). */
  async driver(options: { tempDir?: string; slot?: number } = {}): Promise<Driver> {
    const tempDir = options.tempDir ?? (await this.tempDir())
    const driver = await this.#createDriver({ tempDir, slot: options.slot ?? this.#slot++ })
    this.#closers.push(() => driver.close())
    return driver
  }

  /**
   * Opens a database on a new driver with the deterministic clock and ids. A new database is
   * compressed as the run says (not one a setup script or a given driver already holds).
   */
  async open(
    options: { chunkSize?: number; setupScript?: string; driver?: Driver | GuardedDriver } = {},
  ): Promise<AgentDatabase> {
    const driver = options.driver ?? (await this.driver())
    const guarded = 'inTransaction' in driver ? driver : guardDriver(driver)
    if (options.setupScript) await guarded.executeScript(options.setupScript)
    const db = await openDatabase({
      driver: guarded,
      clock: fixedClock(),
      ids: seededIds(42),
      ...(options.chunkSize === undefined ? {} : { chunkSize: options.chunkSize }),
      ...(this.#compression === undefined ||
      options.setupScript !== undefined ||
      options.driver !== undefined
        ? {}
        : { compression: this.#compression }),
    })
    this.#closers.push(() => db.close())
    return db
  }

  async cleanup(): Promise<void> {
    for (const close of this.#closers.splice(0).reverse()) await close().catch(() => undefined)
    for (const dir of this.#dirs.splice(0)) await rm(dir, { recursive: true, force: true })
  }
}

/** Runs a scenario on a fresh database and returns its observations and dump. */
export async function runScenario(
  scenario: Scenario,
  resources: TestResources,
  driver?: Driver,
): Promise<ScenarioOutcome> {
  const options: { chunkSize?: number; setupScript?: string; driver?: Driver } = {}
  if (scenario.chunkSize !== undefined) options.chunkSize = scenario.chunkSize
  if (scenario.setupScript !== undefined) options.setupScript = scenario.setupScript
  if (driver !== undefined) options.driver = driver
  const db = await resources.open(options)
  const observations = formatObservations(
    await scenario.run({ db, openDatabase: () => resources.open() }),
  )
  const dump = await canonicalDump(db, { chunks: db.chunks })
  return {
    observations,
    dump,
    text: `# scenario ${scenario.id}\n# observations\n${observations}\n${dump}`,
  }
}
