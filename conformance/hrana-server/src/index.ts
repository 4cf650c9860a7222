export type { ProtoError, StmtResult, Value } from './protocol.js'
export { parameterNames } from './protocol.js'
export type { HranaServer, HranaServerOptions } from './server.js'
export { startHranaServer } from './server.js'
