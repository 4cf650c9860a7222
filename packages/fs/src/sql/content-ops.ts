import {
  type ChunkFormat,
  type Executor,
  executeDeferred,
  fsError,
  MODE_PERMISSION_MASK,
  normalizePath,
  replaceOnRewrite,
  S_IFREG,
  type Timestamp,
  twoPathErrors,
} from '@agentfs/core'
import { resize, writeRange } from '../storage/chunks.js'
import { type InodeRow, isDir, isReg, touchedVersion, versionOf } from '../storage/inode.js'
import { createNode, insertInode, touchContent } from '../storage/mutate.js'
import { lookup } from '../storage/resolver.js'
import type { WriteFileOptions } from '../types.js'
import { ConflictError } from './conflict.js'
import { hashBefore, hashContent, knownHash } from './content-hash.js'
import { COPYFILE_EXCL, checkLength, existing, type FsContext, write } from './context.js'
import { copyMimeType, storeMimeType } from './mime.js'

// Operations that change file contents.

export async function writeData(
  ctx: FsContext,
  path: string,
  bytes: Uint8Array,
  append: boolean,
  exclusive: boolean,
  opts: WriteFileOptions & { readonly mode?: number },
): Promise<void> {
  await write(ctx, async (q, now, note) => {
    const found = await lookup(q, path, { followLast: true, syscall: 'open', allowMissing: true })
    const node = found.node
    if (node) {
      if (exclusive) throw fsError('EEXIST', 'open', path)
      if (isDir(node.mode)) throw fsError('EISDIR', 'open', path)
    }
    if (opts.ifMatch !== undefined) {
      const current = node ? versionOf(node) : undefined
      if (current !== opts.ifMatch)
        throw new ConflictError(normalizePath(path), opts.ifMatch, current)
    }
    const content = append ? undefined : hashContent(ctx, bytes)
    if (!node) {
      if (found.name === undefined) throw fsError('EISDIR', 'open', path)
      const mode = S_IFREG | ((opts.mode ?? 0o666) & ~ctx.umask & MODE_PERMISSION_MASK)
      // A new file is born with its final size and times: only its chunks remain to insert.
      const ino = await createNode(q, found.dirIno, found.name, {
        mode,
        uid: ctx.uid,
        gid: ctx.gid,
        size: bytes.byteLength,
        now,
      })
      if (bytes.byteLength > 0) await writeRange(q, ino, 0, ctx.chunks, 0, bytes)
      if (opts.mimeType !== undefined) await storeMimeType(q, ino, opts.mimeType)
      // A new inode's ctime is `now` exactly.
      const after = {
        version: versionOf({ ctime: now.sec, ctime_nsec: now.nsec }),
        size: bytes.byteLength,
      }
      note({ op: 'create', path: normalizePath(path), ino, dir: found.dirIno, content, after })
      return
    }
    const before = await hashBefore(ctx, q, node)
    if (!append && isReg(node.mode) && node.nlink === 1 && replaceOnRewrite(q)) {
      if (found.name === undefined) throw fsError('EISDIR', 'open', path)
      const ino = await replaceFile(q, found.dirIno, found.name, node, ctx.chunks, bytes, now)
      if (opts.mimeType !== undefined) await storeMimeType(q, ino, opts.mimeType)
      note({ op: 'write', path: normalizePath(path), ino, dir: found.dirIno, content, before })
      return
    } else if (!append && node.size > 0) {
      await executeDeferred(q, { sql: 'DELETE FROM fs_data WHERE ino = ?', params: [node.ino] })
    }
    const base = append ? node.size : 0
    const size =
      bytes.byteLength > 0 ? await writeRange(q, node.ino, base, ctx.chunks, base, bytes) : base
    await touchContent(q, node.ino, size, now)
    if (opts.mimeType !== undefined) await storeMimeType(q, node.ino, opts.mimeType)
    const appended = append ? { version: versionOf(node), size: node.size, bytes } : undefined
    const after = { version: touchedVersion(node, now), size }
    note({
      op: 'write',
      path: normalizePath(path),
      ino: node.ino,
      content,
      appended,
      before,
      after,
    })
  })
}

/**
 * A synced database's whole-file write: the bytes go to a new inode (same mode, owner and a
 * later ctime, so the version token still moves forward), the entry is pointed at it and the old
 * inode is dropped, all in the caller's transaction. The sync layer applies the entry's change
 * only if nobody else replaced the file first, so concurrent rewrites never mix chunks.
 */
async function replaceFile(
  q: Executor,
  parent: number,
  name: string,
  old: InodeRow,
  format: ChunkFormat,
  bytes: Uint8Array,
  now: Timestamp,
): Promise<number> {
  const later =
    now.sec > old.ctime || (now.sec === old.ctime && now.nsec > old.ctime_nsec)
      ? now
      : old.ctime_nsec < 999_999_999
        ? { sec: old.ctime, nsec: old.ctime_nsec + 1 }
        : { sec: old.ctime + 1, nsec: 0 }
  const ino = await insertInode(q, old.mode, 1, bytes.byteLength, old.uid, old.gid, later, old.rdev)
  if (bytes.byteLength > 0) await writeRange(q, ino, 0, format, 0, bytes)
  await executeDeferred(q, {
    sql: 'UPDATE fs_dentry SET ino = ? WHERE parent_ino = ? AND name = ?',
    params: [ino, parent, name],
  })
  await executeDeferred(q, { sql: 'DELETE FROM fs_inode WHERE ino = ?', params: [old.ino] })
  await executeDeferred(q, { sql: 'DELETE FROM fs_data WHERE ino = ?', params: [old.ino] })
  // The file keeps its stored media type on its new inode (a new row, not a changed key: a
  // synced database's change capture cannot carry a row whose key changed).
  await executeDeferred(q, {
    sql: 'INSERT INTO agentfs_mime (ino, mime_type) SELECT ?, mime_type FROM agentfs_mime WHERE ino = (SELECT ?)',
    params: [ino, old.ino],
  })
  await executeDeferred(q, { sql: 'DELETE FROM agentfs_mime WHERE ino = ?', params: [old.ino] })
  return ino
}

export async function truncate(ctx: FsContext, path: string, length = 0): Promise<void> {
  checkLength(length, 'open', path)
  await write(ctx, async (q, now, note) => {
    const { node } = await existing(q, path, 'open')
    if (isDir(node.mode)) throw fsError('EISDIR', 'open', path)
    const before = await hashBefore(ctx, q, node)
    await resize(q, node.ino, node.size, ctx.chunks, length)
    await touchContent(q, node.ino, length, now)
    note({ op: 'truncate', path: normalizePath(path), ino: node.ino, before })
  })
}

export async function copyFile(ctx: FsContext, src: string, dest: string, mode = 0): Promise<void> {
  await write(ctx, async (q, now, note) => {
    const { fail, wrap } = twoPathErrors('copyfile', src, dest)
    const source = await wrap(lookup(q, src, { followLast: true, syscall: 'copyfile' }))
    if (!source.node) throw fail('ENOENT')
    const target = await wrap(
      lookup(q, dest, { followLast: true, syscall: 'copyfile', allowMissing: true }),
    )
    // Like Node, errors of the destination's path come first. Unlike libuv, an existing
    // destination is left alone when the source is a directory (libuv deletes it).
    if (isDir(source.node.mode)) throw fail('EISDIR')
    let ino: number
    let before: Uint8Array | null | undefined
    const op = target.node ? 'write' : 'create'
    if (target.node) {
      if (mode & COPYFILE_EXCL) throw fail('EEXIST')
      if (isDir(target.node.mode)) throw fail('EISDIR')
      if (target.node.ino === source.node.ino) return
      ino = target.node.ino
      before = await hashBefore(ctx, q, target.node)
      await q.execute({ sql: 'DELETE FROM fs_data WHERE ino = ?', params: [ino] })
    } else {
      if (target.name === undefined) throw fail('EISDIR')
      ino = await createNode(q, target.dirIno, target.name, {
        mode: S_IFREG | (source.node.mode & MODE_PERMISSION_MASK),
        uid: ctx.uid,
        gid: ctx.gid,
        now,
      })
    }
    // Chunks are copied inside the engine: no file content passes through JavaScript.
    await q.execute({
      sql: 'INSERT INTO fs_data (ino, chunk_index, data) SELECT ?, chunk_index, data FROM fs_data WHERE ino = (SELECT ?)',
      params: [ino, source.node.ino],
    })
    await touchContent(q, ino, source.node.size, now)
    await copyMimeType(q, source.node.ino, ino)
    // The copy's hash is the source's, when this process knows it (else it is read).
    const known = ctx.feed ? knownHash(ctx, source.node.ino, versionOf(source.node)) : undefined
    note({
      op,
      path: normalizePath(dest),
      path2: normalizePath(src),
      ino,
      ...(op === 'create' ? { dir: target.dirIno } : {}),
      ...(known ? { content: { digest: known } } : {}),
      before,
    })
  })
}
