import { aiSdkTools } from '@agentfs/ai-sdk'
import type { AgentFS } from '@agentfs/sdk'
import { generateText, type LanguageModel, stepCountIs } from 'ai'
import { MockLanguageModelV3 } from 'ai/test'

/** The task the agent gets (a real model gets exactly this prompt). */
export const TASK =
  'In /project, greet() in src/greet.js has a bug: it says "Helo". Fix it, add a line about the fix to CHANGELOG.md, and remember in the key memory:last-task what you did.'

export const SESSION_ID = 'demo'

/** A small project for the agent to work on. */
export async function seedProject(agent: AgentFS): Promise<void> {
  await agent.transaction(async (tx) => {
    await tx.fs.mkdir('/project/src', { recursive: true })
    await tx.fs.writeFile(
      '/project/src/greet.js',
      "export function greet(name) {\n  return 'Helo, ' + name + '!'\n}\n",
    )
    await tx.fs.writeFile(
      '/project/src/main.js',
      "import { greet } from './greet.js'\n\nconsole.log(greet('world'))\n",
    )
    await tx.fs.writeFile('/project/CHANGELOG.md', '# Changelog\n')
    await tx.kv.set('user:prefs', { changelogStyle: 'one line per change' })
  })
}

const usage = {
  inputTokens: { total: 120, noCache: 120, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 30, text: 30, reasoning: undefined },
}
const step = (id: number, toolName: string, input: unknown) => ({
  content: [
    {
      type: 'tool-call' as const,
      toolCallId: `call-${id}`,
      toolName,
      input: JSON.stringify(input),
    },
  ],
  finishReason: { unified: 'tool-calls' as const, raw: 'tool_calls' },
  usage,
  warnings: [],
})

/**
 * The scripted model: the calls a capable model makes for {@link TASK}, including one
 * deliberate mistake (an edit whose text is not in the file) that it recovers from by reading
 * the file again. Each step is answered by the real tools on the real database.
 */
export function scriptedModel(): MockLanguageModelV3 {
  return new MockLanguageModelV3({
    doGenerate: [
      step(1, 'list_directory', { path: '/project', depth: 2 }),
      step(2, 'kv_get', { key: 'user:prefs' }),
      step(3, 'grep', { pattern: 'Helo', path: '/project', output_mode: 'content' }),
      // The mistake: it misremembers the line (a template literal instead of concatenation).
      step(4, 'edit_file', {
        path: '/project/src/greet.js',
        old_string: 'return `Helo, `',
        new_string: 'return `Hello, `',
      }),
      step(5, 'read_file', { path: '/project/src/greet.js' }),
      step(6, 'edit_file', {
        path: '/project/src/greet.js',
        old_string: "'Helo, '",
        new_string: "'Hello, '",
      }),
      step(7, 'edit_file', {
        path: '/project/CHANGELOG.md',
        old_string: '# Changelog\n',
        new_string: '# Changelog\n\n- Fix the greeting typo in greet() ("Helo" → "Hello").\n',
      }),
      step(8, 'kv_set', {
        key: 'memory:last-task',
        value: { task: 'fix greeting typo', files: ['src/greet.js', 'CHANGELOG.md'] },
      }),
      step(9, 'grep', { pattern: 'Helo\\b', path: '/project/src', output_mode: 'count' }),
      {
        content: [
          {
            type: 'text' as const,
            text: 'Fixed the typo in src/greet.js, noted it in CHANGELOG.md and saved memory:last-task.',
          },
        ],
        finishReason: { unified: 'stop' as const, raw: 'stop' },
        usage,
        warnings: [],
      },
    ],
  })
}

export interface DemoResult {
  readonly text: string
  readonly steps: number
}

/** Runs the agent loop for {@link TASK} with the AgentFS tools on `agent`. */
export async function runAgent(agent: AgentFS, model: LanguageModel): Promise<DemoResult> {
  const result = await generateText({
    model,
    tools: aiSdkTools({ fs: agent.fs, kv: agent.kv, audit: agent.tools, sessionId: SESSION_ID }),
    stopWhen: stepCountIs(20),
    system:
      'You are a careful coding agent. Use the tools to read before you edit; if a tool reports an error, read the file again and retry.',
    prompt: TASK,
  })
  return { text: result.text, steps: result.steps.length }
}

/** The file tree under `path`, drawn like `tree`. */
export async function drawTree(agent: AgentFS, path = '/'): Promise<string> {
  const lines = [path]
  const walk = async (dir: string, prefix: string): Promise<void> => {
    const entries = await agent.fs.readdir(dir, { withFileTypes: true })
    for (const [i, entry] of entries.entries()) {
      const last = i === entries.length - 1
      const full = `${dir === '/' ? '' : dir}/${entry.name}`
      const size = entry.isDirectory() ? '' : `  (${(await agent.fs.stat(full)).size} B)`
      lines.push(
        `${prefix}${last ? '└── ' : '├── '}${entry.name}${entry.isDirectory() ? '/' : size}`,
      )
      if (entry.isDirectory()) await walk(full, `${prefix}${last ? '    ' : '│   '}`)
    }
  }
  await walk(path, '')
  return lines.join('\n')
}

/** A duration as people read it: 0.4, 12, 1234 (at most one decimal under 10 ms, whole above). */
export function formatMs(ms: number): string {
  return String(ms < 10 ? Math.round(ms * 10) / 10 : Math.round(ms))
}

/** The session's tool calls, oldest first: status, duration and the error the model saw. */
export async function drawTimeline(agent: AgentFS): Promise<string> {
  const calls = await agent.tools.bySession(SESSION_ID)
  return calls
    .map((c) => {
      const ms = c.durationMs === null ? '' : ` ${formatMs(c.durationMs)} ms`
      const error = c.error ? `\n      ↳ ${c.error.split('\n')[0]}` : ''
      return `  #${c.id} ${c.name.padEnd(15)} ${c.status}${ms}${error}`
    })
    .join('\n')
}

/** Per-tool statistics as a table. */
export async function drawStats(agent: AgentFS): Promise<string> {
  const rows = (await agent.tools.stats()).map((s) => [
    s.name,
    String(s.totalCalls),
    String(s.successful),
    String(s.failed),
    s.avgDurationMs === null ? '-' : s.avgDurationMs.toFixed(2),
  ])
  const table = [['tool', 'calls', 'ok', 'failed', 'avg ms'], ...rows]
  const widths = table[0]!.map((_, i) => Math.max(...table.map((r) => r[i]!.length)))
  return table
    .map((r) => `  ${r.map((cell, i) => cell.padEnd(widths[i]!)).join('  ')}`.trimEnd())
    .join('\n')
}
