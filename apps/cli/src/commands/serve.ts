import type { Command } from 'commander'
import { AUDIT_KEY_ENV } from '../audit-key.js'
import { openBranchBase, openExisting, viewOf, withMemoryPolicy } from '../open.js'

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

/** `ui`: the inspector, a local web app over the database, until Ctrl-C. */
export function registerUi(program: Command): void {
  program
    .command('ui')
    .description(
      'the inspector: a web app on 127.0.0.1 showing files and their versions, the tool-call timeline, the live change feed, snapshots, branches, kv, stats and a search of the files (read-only unless --allow-writes; Ctrl-C stops)',
    )
    .argument('<db>')
    .option('--port <n>', 'listen on this port (default: a free one)', portNumber)
    .option(
      '--host <address>',
      'listen on this address instead of 127.0.0.1 (needs --token: anyone who can reach it sees everything)',
    )
    .option('--token <token>', 'the access token (default: a random one, in the printed URL)')
    .option('--allow-writes', 'let the inspector take snapshots')
    .action(
      async (
        db: string,
        o: { port?: number; host?: string; token?: string; allowWrites?: boolean },
      ) => {
        if (o.host !== undefined && o.token === undefined)
          throw new Error(
            `--host ${o.host} needs --token: anyone who can reach that address would see everything the agent did`,
          )
        if (o.token !== undefined && o.token.length < 16)
          throw new Error('--token must be at least 16 characters')
        const agent = await openExisting(db)
        const { serveInspector } = await import('@agentfs/inspector')
        let server: Awaited<ReturnType<typeof serveInspector>>
        try {
          server = await serveInspector(agent, {
            ...(o.port === undefined ? {} : { port: o.port }),
            ...(o.host === undefined ? {} : { host: o.host }),
            ...(o.token === undefined ? {} : { token: o.token }),
            ...(o.allowWrites ? { allowWrites: true } : {}),
            openBase: openBranchBase,
          })
        } catch (error) {
          await agent.close()
          throw error
        }
        process.stdout.write(
          `AgentFS inspector for ${agent.path}${o.allowWrites ? '' : ' (read-only)'}: ${server.url}\nopen it in a browser; Ctrl-C stops\n`,
        )
        await new Promise<void>((resolve) => {
          process.once('SIGINT', resolve)
          process.once('SIGTERM', resolve)
        })
        await server.close()
        await agent.close()
      },
    )
}

function portNumber(value: string): number {
  const n = Number(value)
  if (!Number.isSafeInteger(n) || n < 0 || n > 65535)
    throw new Error(`--port expects 0 … 65535, got ${JSON.stringify(value)}`)
  return n
}
