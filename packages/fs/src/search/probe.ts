/**
 * A capability of the engine behind `key`: as its driver declares it, else what `probe`
 * answers, asked once per handle and remembered in `memo` (a probe that throws says no).
 */
export async function probed(
  memo: WeakMap<object, boolean>,
  key: object,
  declared: boolean | undefined,
  probe: () => Promise<boolean>,
): Promise<boolean> {
  if (declared !== undefined) return declared
  const known = memo.get(key)
  if (known !== undefined) return known
  let found = false
  try {
    found = await probe()
  } catch {
    found = false
  }
  memo.set(key, found)
  return found
}
