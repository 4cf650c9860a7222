import type { Command } from 'commander'
import { json, print, withAgent } from './shared.js'

/** `kv …`: the key-value store. */
export function registerKv(program: Command): void {
  const kv = program.command('kv').description('the key-value store')
  kv.command('get')
    .argument('<db>')
    .argument('<key>')
    .action(async (db: string, key: string) =>
      withAgent(db, async (agent) => {
        const entry = await agent.kv.getEntry(key)
        if (!entry) throw new Error(`key '${key}' is not set`)
        json(entry.value)
      }),
    )
  kv.command('set')
    .description('store VALUE (JSON; text that is not JSON is stored as a string)')
    .argument('<db>')
    .argument('<key>')
    .argument('<value>')
    .action(async (db: string, key: string, value: string) =>
      withAgent(db, async (agent) => {
        let parsed: unknown
        try {
          parsed = JSON.parse(value)
        } catch {
          parsed = value
        }
        print(`version ${await agent.kv.set(key, parsed)}`)
      }),
    )
  kv.command('rm')
    .argument('<db>')
    .argument('<key>')
    .action(async (db: string, key: string) =>
      withAgent(db, async (agent) => {
        if (!(await agent.kv.delete(key))) throw new Error(`key '${key}' is not set`)
      }),
    )
  kv.command('ls')
    .argument('<db>')
    .argument('[prefix]', 'only keys starting with this', '')
    .option('--json', 'print JSON')
    .action(async (db: string, prefix: string, o: { json?: boolean }) =>
      withAgent(db, async (agent) => {
        const entries = []
        for await (const e of agent.kv.entries(prefix ? { prefix } : {})) entries.push(e)
        if (o.json) return json(entries)
        for (const e of entries) print(`${e.key} = ${JSON.stringify(e.value)}`)
      }),
    )
}
