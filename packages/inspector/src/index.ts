export type {
  CallDetail,
  CallFilters,
  CallsOverTime,
  SessionSummary,
  TimelineCall,
} from './api/calls.js'
export type { BoundedDiff, ChangeFilters, FeedPage, KvView } from './api/feed.js'
export type { Blame, BlameLine, FileView, TreeEntry, TreePage } from './api/files.js'
export type { SearchMatch, SearchPage } from './api/search.js'
export { createInspectorApp, type InspectorApp, TOKEN_COOKIE } from './app.js'
export { InspectorApiError, type InspectorClient, inspectorClient } from './client.js'
export type { InspectedAgent, InspectorAppOptions } from './context.js'
export { LIMITS } from './limits.js'
export { type InspectorServeOptions, type InspectorServer, serveInspector } from './server.js'
