import { MAX_MESSAGE } from '@agentfs/core'
import { z } from 'zod'

/** The argument every tool that changes something accepts: why, recorded with its changes. */
export const MESSAGE_ARGUMENT = 'message'

const messageSchema = z
  .string()
  .min(1)
  .max(MAX_MESSAGE)
  .optional()
  .describe(
    'Optional: why you are making this change, in a sentence. Recorded with the change and shown by file_history and blame.',
  )

/** `schema` with the optional `message`, as models see it (objects that have none of their own). */
export function withMessageArgument(schema: z.ZodType): z.ZodType {
  return schema instanceof z.ZodObject && !(MESSAGE_ARGUMENT in schema.shape)
    ? schema.extend({ [MESSAGE_ARGUMENT]: messageSchema })
    : schema
}

/**
 * Splits a call's input into its message (if any) and the tool's own arguments; `error` when
 * the message is not 1 to 4,096 characters without NUL.
 */
export function takeMessage(input: unknown): { message?: string; error?: string; args: unknown } {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) return { args: input }
  if (!Object.hasOwn(input, MESSAGE_ARGUMENT)) return { args: input }
  const { [MESSAGE_ARGUMENT]: message, ...args } = input as Record<string, unknown>
  if (message === undefined || message === null) return { args }
  if (
    typeof message !== 'string' ||
    message.length === 0 ||
    message.length > MAX_MESSAGE ||
    message.includes('\0')
  )
    return {
      args,
      error: `message must be 1 to ${MAX_MESSAGE} characters without NUL; nothing was done`,
    }
  return { message, args }
}
