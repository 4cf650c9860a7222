import { MemoryError } from '../errors.js'

/**
 * The Postgres side of memory events: the connection (a pool of the optional `pg`, transactions
 * whose errors are one line), and the tables (seed 003's `events` and `idempotency_records`), created
 * by numbered migrations in a schema of the caller's choosing. Reads of `events` by a user are
 * owner-only through row-level security: a role granted {@link READER_ROLE} and mapped to a user
 * id in `event_readers` sees that user's events and nothing else; the service role (the tables'
 * owner, which bypasses row-level security) writes.
 */

/** What a query returns: rows. */
export interface PgResult {
  readonly rows: Record<string, unknown>[]
  readonly rowCount: number | null
}

/** What the store needs of a connection: `query` (the `pg` client's shape). */
export interface PgQueryable {
  query(text: string, values?: unknown[]): Promise<PgResult>
}

/** What the store needs of a pool (`pg.Pool`'s shape). */
export interface PgPool extends PgQueryable {
  connect(): Promise<PgQueryable & { release(error?: Error | boolean): void }>
  end(): Promise<void>
}

/** A schema or role name the store accepts: a lowercase SQL name. */
export const SQL_NAME = /^[a-z_][a-z0-9_]{0,62}$/

/** The advisory lock migrations hold. */
const MIGRATE_LOCK = 7_312_001

/** A pool of `connectionString` (the optional peer dependency `pg`). */
export async function poolOf(connectionString: string): Promise<PgPool> {
  let Pool: typeof import('pg').Pool
  try {
    const mod = (await import('pg')) as { default?: { Pool: typeof Pool }; Pool?: typeof Pool }
    Pool = (mod.default?.Pool ?? mod.Pool)!
  } catch {
    throw new MemoryError(
      'INVALID_ARGUMENT',
      'Postgres events need the pg package: npm install pg (or pass a pool)',
    )
  }
  return new Pool({ connectionString, max: 4, allowExitOnIdle: true }) as unknown as PgPool
}

/** A Postgres error as one line of a memory error. */
export function unavailable(error: unknown, what: string): MemoryError {
  return new MemoryError(
    'EVENTS_UNAVAILABLE',
    `${what} failed in Postgres (${error instanceof Error ? error.message.split('\n')[0] : String(error)}); nothing was written to the garden — check the events database and retry`,
  )
}

/** Runs `fn` in a transaction of one connection of `pool`; a Postgres error as one line. */
export async function pgTransaction<T>(
  pool: PgPool,
  what: string,
  fn: (c: PgQueryable) => Promise<T>,
): Promise<T> {
  let client: Awaited<ReturnType<PgPool['connect']>>
  try {
    client = await pool.connect()
  } catch (error) {
    throw unavailable(error, what)
  }
  let broken = false
  try {
    await client.query('BEGIN')
    const out = await fn(client)
    await client.query('COMMIT')
    return out
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {
      broken = true
    })
    if (
      error instanceof MemoryError ||
      (error as { code?: string }).code?.startsWith?.('IDEMPOTENCY')
    )
      throw error
    throw unavailable(error, what)
  } finally {
    client.release(broken)
  }
}

/** Numbered migrations, each once, under an advisory lock (`s`: the quoted schema). */
export async function migrateTables(pool: PgPool, s: string): Promise<void> {
  await pgTransaction(pool, 'migrating the events tables', async (c) => {
    await c.query('SELECT pg_advisory_xact_lock($1)', [MIGRATE_LOCK])
    await c.query(`CREATE SCHEMA IF NOT EXISTS ${s}`)
    await c.query(
      `CREATE TABLE IF NOT EXISTS ${s}.agentfs_memory_schema (version integer NOT NULL)`,
    )
    const { rows } = await c.query(
      `SELECT COALESCE(MAX(version), 0) AS v FROM ${s}.agentfs_memory_schema`,
    )
    const at = Number(rows[0]?.v ?? 0)
    const all = migrations(s)
    if (at > all.length)
      throw new MemoryError(
        'INVALID_ARGUMENT',
        `the events tables are at version ${at}, newer than this @agentfs/memory knows (${all.length}); upgrade it`,
      )
    for (let v = at; v < all.length; v++) {
      await c.query(all[v]!)
      await c.query(`INSERT INTO ${s}.agentfs_memory_schema (version) VALUES ($1)`, [v + 1])
    }
  })
}

/** The group role whose members read their own user's events. */
export const READER_ROLE = 'agentfs_memory_reader'

/** A Postgres identifier, quoted. */
export function ident(name: string): string {
  return `"${name.replaceAll('"', '""')}"`
}

/** The migrations, in order; `s` is the quoted schema. Each runs once, in a transaction. */
export function migrations(s: string): readonly string[] {
  return [
    `CREATE TABLE ${s}.events (
  id uuid PRIMARY KEY,
  user_id text NOT NULL,
  type text NOT NULL,
  op text NOT NULL,
  tool text NOT NULL,
  file_path text,
  section_anchor text,
  rationale text,
  override_rationale text,
  evidence_refs text,
  before_hash text,
  after_hash text,
  intended_hash text,
  lint text,
  tool_call_id text,
  transaction_id bigint,
  agent_action_id text,
  idempotency_key text,
  status text NOT NULL CHECK (status IN ('pending', 'committed', 'failed')),
  error text,
  line_hash text,
  integrity_hmac text NOT NULL,
  integrity_salt_version text NOT NULL,
  created_us bigint NOT NULL,
  updated_us bigint NOT NULL
);
CREATE INDEX events_user_created ON ${s}.events (user_id, created_us DESC);
CREATE INDEX events_pending ON ${s}.events (user_id, created_us) WHERE status = 'pending';
CREATE TABLE ${s}.idempotency_records (
  user_id text NOT NULL,
  scope text NOT NULL,
  key text NOT NULL,
  args_sha256 text NOT NULL,
  args_digests text,
  result text,
  event_id uuid,
  status text NOT NULL CHECK (status IN ('pending', 'committed', 'failed')),
  created_us bigint NOT NULL,
  expires_us bigint NOT NULL,
  mac text NOT NULL,
  key_id text NOT NULL,
  PRIMARY KEY (user_id, scope, key)
);
CREATE INDEX idempotency_records_expires ON ${s}.idempotency_records (expires_us);
CREATE TABLE ${s}.event_readers (
  role_name name PRIMARY KEY,
  user_id text NOT NULL
);
DO $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '${READER_ROLE}') THEN
    CREATE ROLE ${READER_ROLE} NOLOGIN;
  END IF;
END $$;
REVOKE ALL ON ${s}.events, ${s}.idempotency_records, ${s}.event_readers FROM PUBLIC;
GRANT USAGE ON SCHEMA ${s} TO ${READER_ROLE};
GRANT SELECT ON ${s}.events, ${s}.event_readers TO ${READER_ROLE};
ALTER TABLE ${s}.event_readers ENABLE ROW LEVEL SECURITY;
CREATE POLICY event_readers_self ON ${s}.event_readers FOR SELECT TO ${READER_ROLE}
  USING (role_name = current_user);
ALTER TABLE ${s}.events ENABLE ROW LEVEL SECURITY;
CREATE POLICY events_owner_read ON ${s}.events FOR SELECT TO ${READER_ROLE}
  USING (EXISTS (SELECT 1 FROM ${s}.event_readers r
    WHERE r.role_name = current_user AND r.user_id = events.user_id));`,
  ]
}
