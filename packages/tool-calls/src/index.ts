export type {
  QueryOptions,
  RecordInput,
  TimeInput,
  ToolCall,
  ToolStats,
  TrackOptions,
} from './tool-calls.js'
export { createToolCalls, ToolCalls } from './tool-calls.js'
