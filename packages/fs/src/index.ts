export type { FileSystemContext, FileSystemOptions } from './agent-fs.js'
export { AgentFs, createFileSystem } from './agent-fs.js'
export { ConflictError } from './conflict.js'
export { writeFileOptions } from './context.js'
export { copyTree } from './copy-tree.js'
export { Dir } from './dir.js'
export type { HandleWriteOptions } from './file-handle.js'
export { FileHandle } from './file-handle.js'
export type { InodeRow } from './inode.js'
export { versionOf } from './inode.js'
export type { FsOperation, FsPolicy } from './policy.js'
export type { GlobMatch, GlobOptions, GrepMatch, GrepOptions } from './search.js'
export { Dirent, Stats } from './stats.js'
export type { ReadStreamOptions, WriteStreamOptions } from './streams.js'
export type {
  AtimeMode,
  CpOptions,
  Encoding,
  FileSystem,
  FsDir,
  FsFileHandle,
  MkdirOptions,
  ReaddirOptions,
  RmOptions,
  StatFs,
  TimeLike,
  WriteData,
  WriteFileOptions,
} from './types.js'
