import { Command } from 'commander'
import { registerCommands } from './commands.js'
import { addKeyOptions } from './db-key.js'
import { addHelp } from './help.js'
import { registerMount } from './mount-command.js'
import { registerRun, registerRuns } from './run-command.js'

/** The `agentfs` program: every command, its help and examples (parsing is the caller's). */
export function buildProgram(version: string): Command {
  const program = new Command()
    .name('agentfs')
    .description('Inspect and manage AgentFS databases: files, keys, tool calls, overlays')
    .version(version)
    // One line after a usage error, not the whole help.
    .showHelpAfterError('(agentfs --help lists the commands; agentfs COMMAND --help shows one)')
    .exitOverride()
    .enablePositionalOptions()
  registerCommands(program)
  registerMount(program)
  registerRun(program)
  registerRuns(program)
  addKeyOptions(program)
  addHelp(program)
  return program
}
