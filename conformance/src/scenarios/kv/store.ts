import { createKvStore } from '@agentfs/kv'
import type { Scenario } from '../../harness.js'

export const kvStore: Scenario = {
  id: 'kv/store',
  description: 'set, overwrite, compare-and-set, delete and re-create, prefix scans, clear',
  async run({ db }) {
    const kv = createKvStore(db)
    await kv.set('user:prefs', { theme: 'dark', langs: ['en', 'fr'] })
    await kv.set('user:name', 'Ada')
    const v = await kv.set('counter', 1)
    await kv.set('counter', 2, { ifVersion: v })
    const conflict = await kv.set('counter', 3, { ifVersion: v }).then(
      () => 'written',
      (error: { code: string }) => error.code,
    )
    await kv.set('a_b%c', 'literal')
    await kv.set('tmp:1', 1)
    await kv.set('tmp:2', 2)
    await kv.delete('user:name')
    await kv.set('user:name', 'Grace')
    const cleared = await kv.clear('tmp:')
    await kv.update<number>('counter', (n) => (n ?? 0) + 40)
    return {
      conflict,
      cleared,
      userKeys: await kv.keys({ prefix: 'user:' }),
      literal: await kv.keys({ prefix: 'a_' }),
      counter: await kv.getEntry('counter'),
      all: (await kv.list()).entries.map((e) => [e.key, e.value, e.version]),
    }
  },
}
