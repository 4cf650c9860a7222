import type { AsyncLocalStorage } from 'node:async_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { describe, expect, test } from 'vitest'
import { type Actor, currentActor, withActor, withMessage } from '../src/index.js'

/** The process's actor store (shared through the global registry). */
const store = (globalThis as Record<symbol, unknown>)[Symbol.for('agentfs.actor')] as
  | (AsyncLocalStorage<Actor> & { enabled?: boolean })
  | undefined

/**
 * Whether the store's promise hook is installed. Node.js before 24 keeps AsyncLocalStorage with
 * async hooks (`enabled`); from 24 it has no hook to remove, and no `enabled` to read.
 */
const hooked = () => store?.enabled

describe('the actor store', () => {
  test('is disabled again once the last call ends (no promise hook left for the process)', async () => {
    expect(store).toBeDefined()
    const seen = await withActor({ callToken: 't1' }, async () => {
      await sleep(1)
      return currentActor()?.callToken
    })
    expect(seen).toBe('t1')
    if (hooked() !== undefined) expect(hooked()).toBe(false)
    expect(currentActor()).toBeUndefined()
  })

  test('a call that ends first does not take the actor of one still running', async () => {
    let releaseA!: () => void
    const aGate = new Promise<void>((resolve) => {
      releaseA = resolve
    })
    const a = withActor({ callToken: 'a' }, async () => {
      await aGate
      return currentActor()?.callToken
    })
    const b = withActor({ callToken: 'b' }, async () => {
      await sleep(5)
      const before = currentActor()?.callToken
      releaseA()
      await a
      // A has ended (its count released): B still runs under its own actor.
      await sleep(5)
      return [before, currentActor()?.callToken]
    })
    expect(await a).toBe('a')
    expect(await b).toEqual(['b', 'b'])
    if (hooked() !== undefined) expect(hooked()).toBe(false)
  })

  test('a call that throws or rejects ends too, and nested calls keep the outer actor', async () => {
    expect(() =>
      withActor({ callToken: 'x' }, () => {
        throw new Error('sync failure')
      }),
    ).toThrow('sync failure')
    await expect(
      withActor({ callToken: 'y' }, async () => {
        await sleep(1)
        throw new Error('async failure')
      }),
    ).rejects.toThrow('async failure')
    if (hooked() !== undefined) expect(hooked()).toBe(false)

    const inner = await withActor({ sessionId: 's', callToken: 'outer' }, async () => {
      const nested = await withMessage('why', async () => {
        await sleep(1)
        return currentActor()
      })
      // The nested call ended; the outer one still runs under its actor.
      await sleep(1)
      return { nested, after: currentActor() }
    })
    expect(inner.nested).toEqual({ sessionId: 's', callToken: 'outer', message: 'why' })
    expect(inner.after).toEqual({ sessionId: 's', callToken: 'outer' })
    expect(withActor({ callToken: 'sync' }, () => currentActor()?.callToken)).toBe('sync')
    if (hooked() !== undefined) expect(hooked()).toBe(false)
  })
})
