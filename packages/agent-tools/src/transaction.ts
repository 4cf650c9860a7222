import type { ToolEnvironment } from './types.js'

/**
 * Runs `fn` in one transaction of `fs` when it has them (a database filesystem): all its changes
 * commit together or none does. Other filesystems run it as is.
 */
export async function inTransaction<T>(
  fs: ToolEnvironment['fs'],
  fn: (fs: ToolEnvironment['fs']) => Promise<T>,
): Promise<T> {
  const transactional = fs as ToolEnvironment['fs'] & {
    transaction?: <R>(fn: (fs: never) => Promise<R>) => Promise<R>
  }
  if (typeof transactional.transaction === 'function')
    return transactional.transaction((tx) => fn(tx))
  return fn(fs)
}
