import type { FileSystem } from '@agentfs/fs'
import type { KvStore } from '@agentfs/kv'
import type { ToolCalls } from '@agentfs/tool-calls'
import type { z } from 'zod'
import type { ChangeSource } from './history-tools.js'

/** What a tool returns to the model: text, and a flag when it is an error. */
export interface ToolOutput {
  /** The text the model reads. */
  readonly text: string
  /** True for a failure the model should see and react to (never thrown). */
  readonly isError?: boolean
  /** POSIX or AgentFS code of a failure (`ENOENT`, `STALE`, `NOT_FOUND`, …). */
  readonly code?: string
  /** Structured extras for programs (e.g. the file's version). */
  readonly data?: Record<string, unknown>
  /**
   * Images for the model (base64), where the front end can pass them (AI SDK, MCP, OpenAI
   * Agents); `text` always describes them, for front ends that cannot.
   */
  readonly images?: ReadonlyArray<{ readonly data: string; readonly mediaType: string }>
  /**
   * True when the call carried an `idempotency_key` already applied: this is the first call's
   * answer, and nothing was changed again.
   */
  readonly replayed?: boolean
}

/** Maps the model's paths to the filesystem's and enforces the allowed roots. */
export interface PathPolicy {
  /** The filesystem path for a path the model gave; throws a ToolFailure when not allowed. */
  resolve(modelPath: string, fs: FileSystem): Promise<string>
  /** The model's view of a filesystem path. */
  display(fsPath: string): string
  /** Whether a filesystem path (a search result, say) may be shown to the model. */
  visible(fsPath: string, fs: FileSystem): Promise<boolean>
}

/** Where tools run. */
export interface ToolEnvironment {
  readonly fs: FileSystem
  readonly kv?: KvStore
  readonly paths: PathPolicy
  /** The change feed, for `list_changes`. */
  readonly changes?: ChangeSource
  /** Changes are refused (tools that change files only through `fs` check this themselves). */
  readonly readOnly?: boolean
}

/** One tool, defined once; adapters only translate it. */
export interface AgentToolDefinition<Input = unknown> {
  readonly name: string
  /** Written for a model: what it does, when to use it, what it returns. */
  readonly description: string
  readonly inputSchema: z.ZodType<Input>
  /** True when the tool changes files or keys (refused in read-only mode). */
  readonly mutates: boolean
  /**
   * Whether the tool takes an optional `idempotency_key` (default: when it mutates). A keyed
   * call runs in one transaction on the stores of the environment it is given.
   */
  readonly idempotent?: boolean
  /** Which store it needs. */
  readonly needs: 'fs' | 'kv' | 'changes' | 'history' | 'search'
  readonly handler: (
    input: Input,
    env: ToolEnvironment,
    limits: OutputLimits,
  ) => Promise<ToolOutput>
}

/** A tool definition of any input, as `tools` takes them (each validates its own input). */
// biome-ignore lint/suspicious/noExplicitAny: inputs differ per tool; the schema checks each call
export type AnyAgentToolDefinition = AgentToolDefinition<any>

/** Caps on what tools print. */
export interface OutputLimits {
  /** Characters of one tool result (default 100,000). */
  readonly maxChars: number
  /** Lines `read_file` returns without an explicit limit (default 2,000). */
  readonly maxLines: number
  /** Characters per line before it is cut (default 2,000). */
  readonly maxLineLength: number
  /** Entries `glob`/`list_directory` list (default 100 / 1,000). */
  readonly maxResults: number
  /** Largest image `read_file` returns to the model as an image (default 5 MiB). */
  readonly maxImageBytes: number
  /** Largest PDF `read_file` extracts text from (default 50 MiB). */
  readonly maxPdfBytes: number
}

/** Options of {@link createAgentTools}. */
export interface AgentToolsOptions {
  readonly fs: FileSystem
  readonly kv?: KvStore
  /** The change feed (`agent.changes`): adds the `list_changes` tool. */
  readonly changes?: ChangeSource
  /** Where every call is recorded (name, JSON input, result or error, timing). */
  readonly audit?: ToolCalls
  /** Session recorded with every call. */
  readonly sessionId?: string
  /**
   * More tools, defined like the built-in ones (e.g. `bashTool()` of `@agentfs/just-bash`): they
   * get the same validation, path policy, read-only handling and audit in every front end.
   */
  readonly tools?: readonly AnyAgentToolDefinition[]
  /** Only these tools (by their original names). */
  readonly include?: readonly string[]
  /** All tools but these. */
  readonly exclude?: readonly string[]
  /** Prefix for every tool name (e.g. `fs_`). */
  readonly prefix?: string
  /** Rename tools: original name → new name. */
  readonly rename?: Readonly<Record<string, string>>
  /** Paths the model uses are inside this directory of the filesystem (a chroot). */
  readonly root?: string
  /** Only paths under these (after `root`) may be read and written. */
  readonly allowedRoots?: readonly string[]
  /** Refuse every tool that changes files or keys (they are also left out of the tool list). */
  readonly readOnly?: boolean
  readonly limits?: Partial<OutputLimits>
  /**
   * Largest tool input, in bytes of its strings (default 64 MiB): a larger call is refused with
   * EFBIG before any work, so one call cannot exhaust memory.
   */
  readonly maxInputBytes?: number
  /**
   * How long an `idempotency_key` is remembered (default 48 hours): a retry later than this is
   * applied again. Expired keys are deleted a hundred at a time by later keyed calls.
   */
  readonly idempotencyTtlMs?: number
}

/** A ready tool: its public name and an `execute` that validates, runs and audits. */
export interface AgentTool {
  readonly name: string
  readonly originalName: string
  readonly description: string
  readonly inputSchema: z.ZodType
  readonly mutates: boolean
  /** Validates `input`, runs the tool, records the call once, returns the output (never throws for tool errors). */
  execute(input: unknown): Promise<ToolOutput>
}
