export type { FileSystemContext, FileSystemOptions } from './agent-fs.js'
export { AgentFs, createFileSystem } from './agent-fs.js'
export { ConflictError } from './conflict.js'
export { versionOf } from './inode.js'
export { Dirent, Stats } from './stats.js'
export type {
  AtimeMode,
  Encoding,
  FileSystem,
  MkdirOptions,
  ReaddirOptions,
  RmOptions,
  StatFs,
  TimeLike,
  WriteData,
  WriteFileOptions,
} from './types.js'
