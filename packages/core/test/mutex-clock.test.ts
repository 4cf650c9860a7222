import { describe, expect, test } from 'vitest'
import { Mutex } from '../src/driver-kit/index.js'
import { fixedClock, seededIds, systemClock, toMillis } from '../src/index.js'

describe('Mutex', () => {
  test('runs callers one at a time in FIFO order', async () => {
    const mutex = new Mutex()
    const order: string[] = []
    let inside = 0
    const task = (name: string, ms: number) =>
      mutex.run(async () => {
        inside++
        expect(inside).toBe(1)
        order.push(`start ${name}`)
        await new Promise((resolve) => setTimeout(resolve, ms))
        order.push(`end ${name}`)
        inside--
        return name
      })
    const results = await Promise.all([task('a', 10), task('b', 1), task('c', 5)])
    expect(results).toEqual(['a', 'b', 'c'])
    expect(order).toEqual(['start a', 'end a', 'start b', 'end b', 'start c', 'end c'])
    expect(mutex.locked).toBe(false)
  })

  test('a rejection releases the lock', async () => {
    const mutex = new Mutex()
    await expect(mutex.run(async () => Promise.reject(new Error('x')))).rejects.toThrow('x')
    expect(await mutex.run(async () => 1)).toBe(1)
  })
})

describe('clocks and ids', () => {
  test('the system clock is strictly increasing and near Date.now()', () => {
    const clock = systemClock()
    let previous = clock.now()
    for (let i = 0; i < 1000; i++) {
      const next = clock.now()
      expect(next.sec * 1e9 + next.nsec).toBeGreaterThan(previous.sec * 1e9 + previous.nsec)
      expect(next.nsec).toBeLessThan(1e9)
      previous = next
    }
    expect(Math.abs(toMillis(previous) - Date.now())).toBeLessThan(5000)
  })

  test('the fixed clock is deterministic', () => {
    const a = fixedClock({ start: 100, stepNs: 600_000_000 })
    expect([a.now(), a.now(), a.now()]).toEqual([
      { sec: 100, nsec: 0 },
      { sec: 100, nsec: 600_000_000 },
      { sec: 101, nsec: 200_000_000 },
    ])
  })

  test('seeded ids are deterministic, unique and UUID-shaped', () => {
    const first = Array.from({ length: 1000 }, seededIds(7).next)
    const again = Array.from({ length: 1000 }, seededIds(7).next)
    expect(first).toEqual(again)
    expect(new Set(first).size).toBe(1000)
    for (const id of first)
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-8[0-9a-f]{3}-[0-9a-f]{12}$/)
    expect(seededIds(8).next()).not.toBe(first[0])
  })
})
