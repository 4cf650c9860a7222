import { defineConfig } from 'tsup'
import shared from '../../tsup.shared.js'

// The OpenAI Agents model is its own entry, so `@openai/agents` loads only where it is used.
export default defineConfig({
  ...(shared as object),
  entry: ['src/index.ts', 'src/openai-model.ts'],
})
