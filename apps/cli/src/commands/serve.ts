import type { Command } from 'commander'
import { openExisting, viewOf } from '../open.js'

/** `serve mcp`: the agent tools as an MCP server over stdio. */
export function registerServe(program: Command): void {
  program
    .command('serve')
    .description('serve a database')
    .command('mcp')
    .description('an MCP server over stdio with the AgentFS tools')
    .argument('<db>')
    .option('--read-only', 'only the tools that change nothing')
    .option('--bash', 'add a bash tool: a sandboxed bash (just-bash) on the same files')
    .action(async (db: string, o: { readOnly?: boolean; bash?: boolean }) => {
      const agent = await openExisting(db)
      // Started by hand on a terminal it would look hung: say what it is waiting for.
      if (process.stdin.isTTY)
        process.stderr.write(
          `agentfs: serving ${agent.path} as an MCP server on stdin/stdout; an MCP client starts this command itself (Ctrl-C stops)\n`,
        )
      const { serveMcpStdio } = await import('@agentfs/mcp')
      const bash = o.bash ? [(await import('@agentfs/just-bash')).bashTool()] : []
      await serveMcpStdio({
        fs: await viewOf(agent),
        kv: agent.kv,
        changes: agent.changes,
        audit: agent.tools,
        sessionId: 'mcp',
        ...(o.readOnly ? { readOnly: true } : {}),
        ...(bash.length > 0 ? { tools: bash } : {}),
      })
    })
}
