/**
 * The Postgres tables of memory events (seed 003's `events` and `idempotency_records`), created
 * by numbered migrations in a schema of the caller's choosing. Reads of `events` by a user are
 * owner-only through row-level security: a role granted {@link READER_ROLE} and mapped to a user
 * id in `event_readers` sees that user's events and nothing else; the service role (the tables'
 * owner, which bypasses row-level security) writes.
 */

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
