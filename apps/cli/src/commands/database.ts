import { rmSync } from 'node:fs'
import { planMigration } from '@agentfs/core'
import { saveOverlayBase } from '@agentfs/overlay'
import { AgentFS } from '@agentfs/sdk'
import type { Command } from 'commander'
import { encryption } from '../db-key.js'
import {
  checkToken,
  databasePath,
  explainCreateError,
  explainDatabaseError,
  inspectionDriver,
  isId,
  newDatabasePath,
  openExisting,
  refuseDirectory,
  refuseKeyForSync,
  syncToken,
  viewOf,
} from '../open.js'
import { exportTree, importTree, leftOutLines } from '../transfer.js'
import { positiveInteger, print, withAgent } from './shared.js'

/** `init`: create a database, or an overlay over a host directory. */
export function registerInit(program: Command): void {
  program
    .command('init')
    .description('create a database (an id means .agentfs/<id>.db, otherwise a path)')
    .argument('[target]', 'agent id or database path', 'default')
    .option(
      '--chunk-size <bytes>',
      'fs_config.chunk_size of the new database',
      positiveInteger('--chunk-size'),
    )
    .option(
      '--compress',
      'compress file content with zstd (smaller text files, chosen at creation)',
    )
    .option('--force', 'replace an existing database')
    .option('--base <dir>', 'make it a copy-on-write overlay over this host directory')
    .option(
      '--sync-url <url>',
      'a local copy that syncs with this Turso sync server (the first client creates the database there; later ones join it)',
    )
    .option('--token <token>', 'auth token for --sync-url (default: $AGENTFS_SYNC_TOKEN)')
    .action(
      async (
        target: string,
        options: {
          chunkSize?: number
          compress?: boolean
          force?: boolean
          base?: string
          syncUrl?: string
          token?: string
        },
      ) => {
        const path = databasePath(target)
        const { dirname } = await import('node:path')
        const { existsSync } = await import('node:fs')
        // An id goes to .agentfs/ (made on demand); a path's folder must already be there.
        if (!isId(target) && !existsSync(dirname(path)))
          throw new Error(
            `the folder ${dirname(path)} does not exist; create it first (agentfs init does not make folders for a path)`,
          )
        refuseDirectory(path, target)
        const files = ['', '-wal', '-shm', '-info', '-changes', '-wal-revert', '-agentfs-sync.json']
        if (options.force) for (const suffix of files) rmSync(`${path}${suffix}`, { force: true })
        else if (existsSync(path))
          throw new Error(`${path} already exists; pass --force to replace it`)
        if (options.syncUrl !== undefined) {
          if (options.base !== undefined)
            throw new Error(
              '--sync-url and --base cannot be combined; a synced database is not an overlay',
            )
          refuseKeyForSync()
          if (options.compress)
            throw new Error(
              '--compress and --sync-url cannot be combined; create the database compressed, then sync it',
            )
          const { openSynced } = await import('@agentfs/sync')
          const token = checkToken(options.token, '--token') ?? syncToken()
          const synced = await openSynced({
            path: newDatabasePath(target),
            ...(options.chunkSize === undefined ? {} : { chunkSize: options.chunkSize }),
            sync: { url: options.syncUrl, ...(token === undefined ? {} : { authToken: token }) },
          })
          const { slot } = await synced.sync.status()
          await synced.close()
          print(`created ${path}, synced with ${options.syncUrl} (slot ${slot})`)
          return
        }
        if (options.token !== undefined) throw new Error('--token needs --sync-url')
        const agent = await AgentFS.open({
          path: newDatabasePath(target),
          ...encryption(),
          ...(options.chunkSize === undefined ? {} : { chunkSize: options.chunkSize }),
          ...(options.compress ? { compression: 'zstd' as const } : {}),
        }).catch((error: unknown) => {
          throw explainCreateError(error, path)
        })
        if (options.base)
          await saveOverlayBase(agent.db, {
            kind: 'host',
            path: (await import('node:path')).resolve(options.base),
          })
        await agent.close()
        print(
          `created ${path}${options.compress ? ' (file content compressed with zstd)' : ''}${options.base ? ` (overlay over ${options.base})` : ''}`,
        )
      },
    )
}

/** `import` and `export`: copy trees between the host and a database. */
export function registerTransfer(program: Command): void {
  program
    .command('import')
    .description(
      'copy a host directory into a database (created if missing); modes, times and symlinks kept',
    )
    .argument('<hostdir>')
    .argument('[db]', 'agent id or database path', 'default')
    .option('-f, --force', 'replace files and links that already exist')
    .action(async (hostDir: string, db: string, o: { force?: boolean }) => {
      const { existsSync } = await import('node:fs')
      if (!existsSync(hostDir)) throw new Error(`no such directory: ${hostDir}`)
      const agent = existsSync(databasePath(db))
        ? await openExisting(db)
        : await AgentFS.open({ path: newDatabasePath(db), ...encryption() })
      try {
        const result = await importTree(hostDir, await viewOf(agent), { force: o.force ?? false })
        print(`imported ${result.entries} entries (${result.bytes} bytes) into ${agent.path}`)
      } catch (error) {
        throw explainDatabaseError(error, databasePath(db))
      } finally {
        await agent.close()
      }
    })
  program
    .command('export')
    .description("copy a database's files into a host directory; modes, times and symlinks kept")
    .argument('<db>')
    .argument('<hostdir>')
    .option('-f, --force', 'export into a folder that is not empty, replacing what is there')
    .option('--keep-setuid', 'keep setuid, setgid and sticky bits (dropped by default)')
    .action(async (db: string, hostDir: string, o: { force?: boolean; keepSetuid?: boolean }) =>
      withAgent(db, async (agent) => {
        const result = await exportTree(await viewOf(agent), hostDir, {
          force: o.force ?? false,
          keepSpecialBits: o.keepSetuid === true,
        })
        print(`exported ${result.entries} entries (${result.bytes} bytes) to ${hostDir}`)
        const skipped = result.skipped.map((path) => ({
          path,
          reason: 'a FIFO, socket or device: an export makes files, directories and links only',
        }))
        for (const line of leftOutLines(result.droppedBits, skipped, '--keep-setuid')) print(line)
      }),
    )
}

/** `migrate`: bring a database to the current layout. */
export function registerMigrate(program: Command): void {
  program
    .command('migrate')
    .description('bring a database to the current layout (one transaction)')
    .argument('<db>')
    .option('--dry-run', 'only show what would change')
    .action(async (db: string, o: { dryRun?: boolean }) => {
      const path = databasePath(db)
      if (o.dryRun) {
        const { guardDriver } = await import('@agentfs/core')
        const driver = guardDriver(await inspectionDriver(path))
        try {
          const plan = await planMigration(driver)
          print(
            plan.steps.length === 0
              ? `${path} is up to date (layout ${plan.from})`
              : `from layout ${plan.from}:\n${plan.steps.map((s) => `  ${s.description}`).join('\n')}`,
          )
        } finally {
          await driver.close()
        }
        return
      }
      await withAgent(
        db,
        async (agent) => {
          const steps = agent.db.migration.steps
          print(
            steps.length === 0
              ? `${path} is up to date`
              : `migrated from ${agent.db.migration.from}:\n${steps.map((s) => `  ${s.description}`).join('\n')}`,
          )
        },
        { migrate: true },
      )
    })
}
