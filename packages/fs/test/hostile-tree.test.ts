import { isAgentFsError } from '@agentfs/core'
import { HOSTILE_BASE, HOSTILE_CASES, HOSTILE_OPERATIONS } from '@agentfs/test-kit'
import { describe, expect, test } from 'vitest'
import { code, DRIVERS, freshFs } from './helpers.js'

// Crafted trees an attacker can hand over (a database file, a sync peer's rows): every walk up
// or down the tree is bounded, so each call answers in time with a result or a typed error.

for (const driver of Object.keys(DRIVERS)) {
  describe(`crafted directory cycles (${driver})`, () => {
    test('renaming into a directory that is its own ancestor twice over answers at once', async () => {
      const { fs, db } = await freshFs(driver)
      await fs.mkdir('/dir/sub', { recursive: true })
      await fs.mkdir('/other')
      // /dir/sub/back and /dir/sub/back2 both name /dir: every step up from /dir has three
      // parents, so a walk without a visited set doubles its rows every two levels.
      for (const name of ['back', 'back2'])
        await db.execute({
          sql: `INSERT INTO fs_dentry (name, parent_ino, ino) SELECT ?, s.ino, d.ino
                FROM fs_dentry s, fs_dentry d WHERE s.name = 'sub' AND d.name = 'dir'`,
          params: [name],
        })
      const started = Date.now()
      // Into the cycle: is /dir/sub/back (= /dir) inside /other? No: the rename may go ahead.
      await fs.rename('/other', '/dir/sub/back/other')
      expect(await fs.exists('/dir/other')).toBe(true)
      // And a directory into its own cycle is refused as a move into itself.
      expect(await code(fs.rename('/dir', '/dir/sub/back2/moved'))).toBe('EINVAL')
      expect(Date.now() - started).toBeLessThan(10_000)
    }, 60_000)
  })
}

for (const driver of Object.keys(DRIVERS)) {
  describe(`crafted entry names (${driver})`, () => {
    test.each([
      ['empty', '', 'it is empty'],
      ['.', '.', 'it is "."'],
      ['..', '..', 'it is ".."'],
      ['with NUL', new Uint8Array([0x61, 0, 0x62]), 'it contains NUL'],
      ['with a slash', 'a/b', 'it contains "/"'],
      ['a BLOB', new Uint8Array([0x68, 0x69]), 'it is not text'],
    ])('a name %s is EIO from readdir, however the names are read', async (_, name, why) => {
      const { fs, db } = await freshFs(driver)
      await fs.mkdir('/d')
      await fs.writeFile('/d/a', 'x')
      await fs.writeFile('/d/z', 'y')
      // The directory is remembered (a listing answered at once), then an entry is crafted.
      expect(await fs.readdir('/d')).toEqual(['a', 'z'])
      await db.execute({
        sql: `INSERT INTO fs_dentry (name, parent_ino, ino) SELECT ${why.includes('NUL') ? 'CAST(? AS TEXT)' : '?'}, d.ino, f.ino
              FROM fs_dentry d, fs_dentry f WHERE d.name = 'd' AND f.name = 'a'`,
        params: [name],
      })
      // A driver that reads text up to its first NUL (libSQL's) cannot hand such a name over.
      const { rows } = await db.execute<{ name: unknown }>({ sql: 'SELECT name FROM fs_dentry' })
      if (why.includes('NUL') && !rows.some((r) => String(r.name).includes('\0'))) return
      for (let round = 0; round < 2; round++) {
        const error = await fs.readdir('/d').catch((e: unknown) => e)
        expect(isAgentFsError(error, 'EIO'), String(error)).toBe(true)
        expect((error as Error).message).toContain(`cannot be a path component: ${why}`)
      }
    })
  })
}

// The hostile-database corpus on every driver, in process: each operation answers with a result
// or a typed error (the reliability suite runs the same through the SDK in a child process with
// a time limit, and the CLI's suite through every command).
for (const driver of Object.keys(DRIVERS)) {
  describe(`the hostile-database corpus (${driver})`, () => {
    test.each(HOSTILE_CASES.map((c) => [c.name, c] as const))(
      '%s: every operation answers, typed',
      async (_name, hostile) => {
        const { fs, db } = await freshFs(driver)
        for (const d of HOSTILE_BASE.dirs) await fs.mkdir(d)
        for (const [file, content] of Object.entries(HOSTILE_BASE.files))
          await fs.writeFile(file, content)
        for (const sql of hostile.sql.split(';\n')) await db.execute({ sql })
        for (const [name, run] of HOSTILE_OPERATIONS) {
          const outcome = await run(fs).then(
            () => 'ok',
            (error: unknown) => (isAgentFsError(error) ? 'typed' : `untyped: ${String(error)}`),
          )
          expect(outcome, `${hostile.name}: ${name}`).toMatch(/^(ok|typed)$/)
        }
      },
      60_000,
    )
  })
}
