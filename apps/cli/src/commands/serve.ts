import type { Command } from 'commander'
import { AUDIT_KEY_ENV } from '../audit-key.js'
import { openExisting, viewOf, withMemoryPolicy } from '../open.js'

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
    .option(
      '--memory',
      "seed 003's memory toolbelt for --user's garden, and every tool held to the memory policy (anchors, identity frontmatter, no deletes, the allowed roots); events are sealed with $AGENTFS_AUDIT_KEY_FILE",
    )
    .option('--user <id>', 'with --memory: the user whose garden the agent tends')
    .action(
      async (
        db: string,
        o: { readOnly?: boolean; bash?: boolean; memory?: boolean; user?: string },
      ) => {
        if (o.user !== undefined && !o.memory) throw new Error('--user goes with --memory')
        if (o.memory && o.user === undefined)
          throw new Error('--memory needs --user ID: the user whose garden the agent tends')
        const agent = await openExisting(db)
        // Started by hand on a terminal it would look hung: say what it is waiting for.
        if (process.stdin.isTTY)
          process.stderr.write(
            `agentfs: serving ${agent.path} as an MCP server on stdin/stdout; an MCP client starts this command itself (Ctrl-C stops)\n`,
          )
        const { serveMcpStdio } = await import('@agentfs/mcp')
        const tools = o.bash ? [(await import('@agentfs/just-bash')).bashTool()] : []
        let fs = await viewOf(agent)
        if (o.memory) {
          if (!process.env[AUDIT_KEY_ENV])
            throw new Error(
              `--memory seals its events with a key: set ${AUDIT_KEY_ENV} to a key file (openssl rand -hex 32 > key)`,
            )
          const { memoryTools } = await import('@agentfs/memory')
          fs = await withMemoryPolicy(fs)
          tools.push(...memoryTools({ userId: o.user! }))
        }
        await serveMcpStdio({
          fs,
          kv: agent.kv,
          changes: agent.changes,
          audit: agent.tools,
          sessionId: 'mcp',
          ...(o.readOnly ? { readOnly: true } : {}),
          ...(tools.length > 0 ? { tools } : {}),
        })
      },
    )
}
