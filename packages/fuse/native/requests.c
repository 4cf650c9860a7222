/* libfuse's request handlers: each copies its arguments and hands the request to JavaScript. */
#include "binding.h"

#define SESSION(req) ((session_t *)fuse_req_userdata(req))
#define BEGIN(op, ino)                                   \
  request_t *r = new_request(req, op, ino);              \
  if (r == NULL) return;
#define SEND() post(SESSION(req), r)

static void ll_lookup(fuse_req_t req, fuse_ino_t parent, const char *name) {
  BEGIN(OP_LOOKUP, parent);
  r->name = (name);
  SEND();
}

static void ll_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup) {
  session_t *s = SESSION(req);
  fuse_reply_none(req);
  request_t *r = new_request(NULL, OP_FORGET, ino);
  if (r == NULL) return;
  r->nlookup = nlookup;
  post(s, r);
}

static void ll_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets) {
  session_t *s = SESSION(req);
  fuse_reply_none(req);
  for (size_t i = 0; i < count; i++) {
    request_t *r = new_request(NULL, OP_FORGET, forgets[i].ino);
    if (r == NULL) return;
    r->nlookup = forgets[i].nlookup;
    post(s, r);
  }
}

static void ll_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  BEGIN(OP_GETATTR, ino);
  r->fh = fi != NULL ? fi->fh : 0;
  SEND();
}

static void ll_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
                       struct fuse_file_info *fi) {
  BEGIN(OP_SETATTR, ino);
  r->attr = *attr;
  r->to_set = to_set;
  r->fh = fi != NULL ? fi->fh : 0;
  SEND();
}

static void ll_readlink(fuse_req_t req, fuse_ino_t ino) {
  BEGIN(OP_READLINK, ino);
  SEND();
}

static void ll_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
                     dev_t rdev) {
  BEGIN(OP_MKNOD, parent);
  r->name = (name);
  r->mode = mode;
  r->rdev = rdev;
  SEND();
}

static void ll_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode) {
  BEGIN(OP_MKDIR, parent);
  r->name = (name);
  r->mode = mode;
  SEND();
}

static void ll_unlink(fuse_req_t req, fuse_ino_t parent, const char *name) {
  BEGIN(OP_UNLINK, parent);
  r->name = (name);
  SEND();
}

static void ll_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name) {
  BEGIN(OP_RMDIR, parent);
  r->name = (name);
  SEND();
}

static void ll_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name) {
  BEGIN(OP_SYMLINK, parent);
  r->name = (name);
  r->name2 = (link);
  SEND();
}

static void ll_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
                      const char *newname, unsigned int flags) {
  BEGIN(OP_RENAME, parent);
  r->name = (name);
  r->ino2 = newparent;
  r->name2 = (newname);
  r->flags = (int)flags;
  SEND();
}

static void ll_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname) {
  BEGIN(OP_LINK, ino);
  r->ino2 = newparent;
  r->name2 = (newname);
  SEND();
}

static void ll_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  BEGIN(OP_OPEN, ino);
  r->flags = fi->flags;
  SEND();
}

static void ll_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                    struct fuse_file_info *fi) {
  BEGIN(OP_READ, ino);
  r->size = size;
  r->off = off;
  r->fh = fi->fh;
  SEND();
}

static void ll_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
                     struct fuse_file_info *fi) {
  BEGIN(OP_WRITE, ino);
  r->data = buf;
  r->data_len = size;
  r->off = off;
  r->fh = fi->fh;
  SEND();
}

static void ll_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  BEGIN(OP_FLUSH, ino);
  r->fh = fi->fh;
  SEND();
}

static void ll_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  BEGIN(OP_RELEASE, ino);
  r->fh = fi->fh;
  r->flags = fi->flags;
  SEND();
}

static void ll_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi) {
  BEGIN(OP_FSYNC, ino);
  r->datasync = datasync;
  r->fh = fi->fh;
  SEND();
}

static void ll_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  BEGIN(OP_OPENDIR, ino);
  r->flags = fi->flags;
  SEND();
}

static void ll_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                       struct fuse_file_info *fi) {
  BEGIN(OP_READDIR, ino);
  r->size = size;
  r->off = off;
  r->fh = fi->fh;
  SEND();
}

static void ll_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                           struct fuse_file_info *fi) {
  BEGIN(OP_READDIRPLUS, ino);
  r->size = size;
  r->off = off;
  r->fh = fi->fh;
  SEND();
}

static void ll_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  BEGIN(OP_RELEASEDIR, ino);
  r->fh = fi->fh;
  SEND();
}

static void ll_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi) {
  BEGIN(OP_FSYNCDIR, ino);
  r->datasync = datasync;
  r->fh = fi->fh;
  SEND();
}

static void ll_statfs(fuse_req_t req, fuse_ino_t ino) {
  BEGIN(OP_STATFS, ino);
  SEND();
}

static void ll_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
                      struct fuse_file_info *fi) {
  BEGIN(OP_CREATE, parent);
  r->name = (name);
  r->mode = mode;
  r->flags = fi->flags;
  SEND();
}

static void ll_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length,
                         struct fuse_file_info *fi) {
  BEGIN(OP_FALLOCATE, ino);
  r->flags = mode;
  r->off = offset;
  r->length = length;
  r->fh = fi->fh;
  SEND();
}

/*
 * The kernel clears setuid/setgid bits itself on write, truncate and chown (sending the mode
 * change as a setattr), so the filesystem does not have to. Lookups and listings in one
 * directory run in parallel (the kernel serialises them per directory otherwise). Listings carry
 * their entries' attributes (readdirplus) when JavaScript answers them; the kernel keeps written
 * data in its cache and writes it back later (writeback cache) only when asked.
 */
static void ll_init(void *userdata, struct fuse_conn_info *conn) {
  session_t *s = userdata;
  conn->want &= ~FUSE_CAP_HANDLE_KILLPRIV;
  if (conn->capable & FUSE_CAP_PARALLEL_DIROPS) conn->want |= FUSE_CAP_PARALLEL_DIROPS;
  if (!(s->features & FEATURE_READDIRPLUS))
    conn->want &= ~(FUSE_CAP_READDIRPLUS | FUSE_CAP_READDIRPLUS_AUTO);
  if (s->features & FEATURE_NO_OPEN) conn->want &= ~FUSE_CAP_ATOMIC_O_TRUNC;
  if ((s->features & FEATURE_WRITEBACK_CACHE) && (conn->capable & FUSE_CAP_WRITEBACK_CACHE))
    conn->want |= FUSE_CAP_WRITEBACK_CACHE;
}

const struct fuse_lowlevel_ops agentfs_operations = {
    .init = ll_init,
    .lookup = ll_lookup,
    .forget = ll_forget,
    .forget_multi = ll_forget_multi,
    .getattr = ll_getattr,
    .setattr = ll_setattr,
    .readlink = ll_readlink,
    .mknod = ll_mknod,
    .mkdir = ll_mkdir,
    .unlink = ll_unlink,
    .rmdir = ll_rmdir,
    .symlink = ll_symlink,
    .rename = ll_rename,
    .link = ll_link,
    .open = ll_open,
    .read = ll_read,
    .write = ll_write,
    .flush = ll_flush,
    .release = ll_release,
    .fsync = ll_fsync,
    .opendir = ll_opendir,
    .readdir = ll_readdir,
    .readdirplus = ll_readdirplus,
    .releasedir = ll_releasedir,
    .fsyncdir = ll_fsyncdir,
    .statfs = ll_statfs,
    .create = ll_create,
    .fallocate = ll_fallocate,
};
