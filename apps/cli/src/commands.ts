import type { Command } from 'commander'
import { registerVerify } from './commands/audit.js'
import { registerInit, registerMigrate, registerTransfer } from './commands/database.js'
import { registerEncryption } from './commands/encryption.js'
import { registerFs } from './commands/fs.js'
import { registerBranch, registerHistory } from './commands/history.js'
import { registerInspect } from './commands/inspect.js'
import { registerKv } from './commands/kv.js'
import { registerOverlay } from './commands/overlay.js'
import { registerSearch } from './commands/search.js'
import { registerServe, registerUi } from './commands/serve.js'
import { registerSync } from './commands/sync.js'

export { colorDiff, useColor } from './commands/shared.js'

/** Registers every command on the program, in the order `--help` lists them. */
export function registerCommands(program: Command): void {
  registerInit(program)
  registerFs(program)
  registerSearch(program)
  registerTransfer(program)
  registerKv(program)
  registerInspect(program)
  registerVerify(program)
  registerMigrate(program)
  registerEncryption(program)
  registerOverlay(program)
  registerHistory(program)
  registerBranch(program)
  registerServe(program)
  registerUi(program)
  registerSync(program)
}
