/*
 * @agentfs/fuse: a Node-API binding of libfuse 3's low-level (inode-based) API.
 *
 * The FUSE device is read on Node's own event loop: libuv polls it, and when the kernel has
 * requests they are read (nonblocking) and decoded by libfuse on the JavaScript thread, which
 * calls the request handlers below, which call JavaScript at once. A request costs one wake-up
 * of the JavaScript thread and no hand-off between threads. Handlers in JavaScript are
 * asynchronous: a request is answered whenever its handler is done, in any order, and the loop
 * goes on reading requests meanwhile (a slow read holds up no other request). Promise
 * continuations run when a batch of requests has been handed over, so a handler that needs no
 * waiting answers within the same wake-up. A request JavaScript drops unanswered is answered EIO
 * when its handle is collected, so the kernel never waits forever. The session is freed only
 * after polling has stopped and every request it handed out has been answered.
 *
 * Invalidations (telling the kernel to drop what it cached of an inode or a name, after a change
 * it did not see) are sent by a thread of their own: the kernel may make such a notice wait for a
 * directory lock held by a request this thread has yet to answer, so sending it from here could
 * wait forever.
 */
#define FUSE_USE_VERSION 34
#define NAPI_VERSION 8
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <fuse_lowlevel.h>
#include <node_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

extern char **environ;

/* Operation numbers, in the order of OPERATIONS in src/native.ts. */
enum {
  OP_LOOKUP,
  OP_FORGET,
  OP_GETATTR,
  OP_SETATTR,
  OP_READLINK,
  OP_MKNOD,
  OP_MKDIR,
  OP_UNLINK,
  OP_RMDIR,
  OP_SYMLINK,
  OP_RENAME,
  OP_LINK,
  OP_OPEN,
  OP_READ,
  OP_WRITE,
  OP_FLUSH,
  OP_RELEASE,
  OP_FSYNC,
  OP_OPENDIR,
  OP_READDIR,
  OP_RELEASEDIR,
  OP_FSYNCDIR,
  OP_STATFS,
  OP_CREATE,
  OP_FALLOCATE,
  OP_READDIRPLUS,
  OP_ENDED, /* not a request: the session loop has ended (unmounted, from here or outside) */
};

/* What the filesystem supports beyond the basic calls (mount's fourth argument). */
#define FEATURE_READDIRPLUS 1
#define FEATURE_WRITEBACK_CACHE 2
#define FEATURE_NO_OPEN 4 /* no open handler: O_TRUNC must reach the filesystem as a truncate */

/* Requests read from the device per wake-up before their continuations run. */
#define BATCH 64

/* An invalidation waiting to be sent: of an inode (name NULL), or of a name in directory ino. */
typedef struct notice {
  struct notice *next;
  fuse_ino_t ino;
  char *name;
  size_t length;
} notice_t;

typedef struct session {
  struct fuse_session *se;
  int holders; /* atomic: 1 for the JavaScript side, 1 while the notifier thread runs */
  pthread_mutex_t notices_lock;
  pthread_cond_t notices_ready;
  notice_t *notices, *notices_tail;
  int notifier_running, notifier_stop;
  napi_env env;
  napi_ref dispatch;
  napi_ref resource; /* the async resource the callbacks run in */
  napi_async_context context;
  uv_poll_t poll;
  struct fuse_buf buf; /* libfuse reads each request into it */
  int refs;         /* 1 until the poll handle is closed, 1 per request not yet answered */
  int loop_running; /* requests are being read */
  int features;     /* FEATURE_* bits JavaScript asked for */
  uint64_t spin_ns; /* how long to keep reading the device after a batch */
  char *mountpoint;
} session_t;

typedef struct request {
  int op;
  session_t *session;
  fuse_req_t req; /* NULL once answered */
  fuse_ino_t ino, ino2;
  const char *name, *name2; /* libfuse's buffer: valid while the request is being handed over */
  uint64_t fh;
  int flags, to_set, datasync;
  mode_t mode;
  dev_t rdev;
  size_t size;
  off_t off, length;
  const char *data;
  size_t data_len;
  struct stat attr;
  uint64_t nlookup;
  uid_t uid;
  gid_t gid;
  pid_t pid;
  mode_t umask;
} request_t;

static void call_js(session_t *s, request_t *r);

/* Frees the native session once neither the JavaScript side nor the notifier holds it. */
static void session_release(session_t *s) {
  if (__atomic_sub_fetch(&s->holders, 1, __ATOMIC_ACQ_REL) > 0) return;
  for (notice_t *n = s->notices; n != NULL;) {
    notice_t *next = n->next;
    free(n->name);
    free(n);
    n = next;
  }
  fuse_session_destroy(s->se);
  pthread_mutex_destroy(&s->notices_lock);
  pthread_cond_destroy(&s->notices_ready);
  free(s->mountpoint);
  free(s);
}

/* Called on the JavaScript thread only. */
static void session_unref(session_t *s) {
  if (--s->refs > 0) return;
  free(s->buf.mem);
  s->buf.mem = NULL;
  napi_delete_reference(s->env, s->dispatch);
  napi_delete_reference(s->env, s->resource);
  napi_async_destroy(s->env, s->context);
  session_release(s);
}

/* Takes the request for answering: NULL when it was answered already. */
static fuse_req_t take(request_t *r) {
  fuse_req_t req = r->req;
  r->req = NULL;
  return req;
}

static void answered(request_t *r) { session_unref(r->session); }

static void request_finalize(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  request_t *r = data;
  fuse_req_t req = take(r);
  if (req != NULL) {
    fuse_reply_err(req, EIO);
    answered(r);
  }
  free(r);
}

/* Hands a request to JavaScript; the request struct lives on as its handle's data. */
static void post(session_t *s, request_t *r) {
  r->session = s;
  if (r->req != NULL) {
    const struct fuse_ctx *ctx = fuse_req_ctx(r->req);
    r->uid = ctx->uid;
    r->gid = ctx->gid;
    r->pid = ctx->pid;
    r->umask = ctx->umask;
    s->refs++;
  }
  call_js(s, r);
}

static request_t *new_request(fuse_req_t req, int op, fuse_ino_t ino) {
  request_t *r = calloc(1, sizeof(request_t));
  if (r == NULL) {
    if (req != NULL) fuse_reply_err(req, ENOMEM);
    return NULL;
  }
  r->req = req;
  r->op = op;
  r->ino = ino;
  return r;
}

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

static const struct fuse_lowlevel_ops OPERATIONS = {
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

/* ---- in JavaScript's thread ---- */

#define CHECK(call)                                                        \
  do {                                                                     \
    if ((call) != napi_ok) {                                               \
      napi_throw_error(env, NULL, "agentfs fuse: Node-API call failed"); \
      return NULL;                                                         \
    }                                                                      \
  } while (0)

static void set_number(napi_env env, napi_value object, const char *key, double value) {
  napi_value v;
  napi_create_double(env, value, &v);
  napi_set_named_property(env, object, key, v);
}

static void set_string(napi_env env, napi_value object, const char *key, const char *value) {
  if (value == NULL) return;
  napi_value v;
  napi_create_string_utf8(env, value, NAPI_AUTO_LENGTH, &v);
  napi_set_named_property(env, object, key, v);
}

/* Calls dispatch(op, handle, fields) for a request, in a handle scope of its own. */
static void call_js(session_t *s, request_t *r) {
  napi_env env = s->env;
  napi_handle_scope scope;
  napi_value fields, op, handle, undefined, dispatch, argv[3];
  if (napi_open_handle_scope(env, &scope) != napi_ok) {
    fuse_req_t req = take(r);
    if (req != NULL) {
      fuse_reply_err(req, EIO);
      answered(r);
    }
    free(r);
    return;
  }
  napi_get_undefined(env, &undefined);
  napi_get_reference_value(env, s->dispatch, &dispatch);
  napi_create_object(env, &fields);
  napi_create_int32(env, r->op, &op);
  set_number(env, fields, "ino", (double)r->ino);
  set_string(env, fields, "name", r->name);
  set_string(env, fields, "name2", r->name2);
  switch (r->op) {
    case OP_FORGET:
      set_number(env, fields, "nlookup", (double)r->nlookup);
      break;
    case OP_ENDED:
      set_number(env, fields, "result", r->flags);
      break;
    default:
      set_number(env, fields, "ino2", (double)r->ino2);
      set_number(env, fields, "fh", (double)r->fh);
      set_number(env, fields, "flags", r->flags);
      set_number(env, fields, "mode", r->mode);
      set_number(env, fields, "rdev", (double)r->rdev);
      set_number(env, fields, "size", (double)r->size);
      set_number(env, fields, "offset", (double)r->off);
      set_number(env, fields, "length", (double)r->length);
      set_number(env, fields, "datasync", r->datasync);
      set_number(env, fields, "uid", r->uid);
      set_number(env, fields, "gid", r->gid);
      set_number(env, fields, "pid", r->pid);
      set_number(env, fields, "umask", r->umask);
      break;
  }
  if (r->op == OP_SETATTR) {
    set_number(env, fields, "toSet", r->to_set);
    set_number(env, fields, "mode", r->attr.st_mode);
    set_number(env, fields, "uid", r->attr.st_uid);
    set_number(env, fields, "gid", r->attr.st_gid);
    set_number(env, fields, "size", (double)r->attr.st_size);
    set_number(env, fields, "atimeSec", (double)r->attr.st_atim.tv_sec);
    set_number(env, fields, "atimeNsec", (double)r->attr.st_atim.tv_nsec);
    set_number(env, fields, "mtimeSec", (double)r->attr.st_mtim.tv_sec);
    set_number(env, fields, "mtimeNsec", (double)r->attr.st_mtim.tv_nsec);
  }
  if (r->op == OP_WRITE) {
    napi_value buffer;
    void *bytes;
    napi_create_buffer_copy(env, r->data_len, r->data, &bytes, &buffer);
    napi_set_named_property(env, fields, "data", buffer);
  }
  /* libfuse's buffer is read again for the next request: nothing may point into it. */
  r->name = r->name2 = r->data = NULL;
  if (r->req != NULL) {
    if (napi_create_external(env, r, request_finalize, NULL, &handle) != napi_ok) {
      fuse_req_t req = take(r);
      fuse_reply_err(req, EIO);
      answered(r);
      free(r);
      napi_close_handle_scope(env, scope);
      return;
    }
  } else {
    handle = undefined; /* nothing to answer: the fields are all JavaScript needs */
    free(r);
  }
  argv[0] = op;
  argv[1] = handle;
  argv[2] = fields;
  if (napi_call_function(env, undefined, dispatch, 3, argv, NULL) == napi_pending_exception) {
    napi_value error;
    napi_get_and_clear_last_exception(env, &error);
    napi_fatal_exception(env, error);
  }
  napi_close_handle_scope(env, scope);
}

static void poll_closed(uv_handle_t *handle) { session_unref(handle->data); }

/* Stops reading requests and tells JavaScript the session has ended (once). */
static void end_session(session_t *s, int result) {
  if (!s->loop_running) return;
  s->loop_running = 0;
  pthread_mutex_lock(&s->notices_lock);
  s->notifier_stop = 1;
  pthread_cond_signal(&s->notices_ready);
  pthread_mutex_unlock(&s->notices_lock);
  uv_poll_stop(&s->poll);
  uv_close((uv_handle_t *)&s->poll, poll_closed);
  request_t *r = new_request(NULL, OP_ENDED, 0);
  if (r != NULL) {
    r->flags = result;
    post(s, r);
  }
}

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/*
 * Handles the requests waiting on the device, up to BATCH, in one callback scope: closing it
 * runs the promise continuations of their handlers (microtasks and ticks), which answer the ones
 * that needed no waiting. Returns how many were handled, or -1 when the session ended.
 */
static int handle_waiting(session_t *s) {
  napi_env env = s->env;
  napi_handle_scope scope;
  napi_callback_scope callbacks;
  napi_value resource;
  int handled = 0;
  int res = fuse_session_receive_buf(s->se, &s->buf);
  if (res == -EAGAIN || res == -EINTR) return 0;
  if (napi_open_handle_scope(env, &scope) != napi_ok) return 0;
  napi_get_reference_value(env, s->resource, &resource);
  if (napi_open_callback_scope(env, resource, s->context, &callbacks) != napi_ok) {
    napi_close_handle_scope(env, scope);
    return 0;
  }
  for (;;) {
    if (res <= 0 || fuse_session_exited(s->se)) {
      if (res != -EAGAIN && res != -EINTR) {
        end_session(s, res < 0 ? res : 0);
        handled = -1;
      }
      break;
    }
    fuse_session_process_buf(s->se, &s->buf);
    if (++handled >= BATCH || !s->loop_running) break;
    res = fuse_session_receive_buf(s->se, &s->buf);
  }
  napi_close_callback_scope(env, callbacks);
  napi_close_handle_scope(env, scope);
  return handled;
}

/*
 * The device is readable. Requests are handled in batches (handle_waiting); after a batch the
 * device is read again for a short while (s->spin_ns) before going back to the event loop: the
 * program that sent the request usually sends its next one within microseconds of its answer,
 * and catching it here spares the wake-up of this thread, which costs more than the request on
 * a virtual machine. One callback returns to the event loop after at most SLICE_NS, so timers
 * and other I/O are not held up.
 */
#define SLICE_NS 2000000u
static void on_readable(uv_poll_t *poll, int status, int events) {
  (void)events;
  session_t *s = poll->data;
  s->refs++; /* the session outlives this callback whatever its requests do */
  if (status < 0) {
    napi_handle_scope scope;
    if (napi_open_handle_scope(s->env, &scope) == napi_ok) {
      end_session(s, 0);
      napi_close_handle_scope(s->env, scope);
    }
  } else {
    uint64_t start = now_ns(), deadline = start + s->spin_ns;
    while (s->loop_running) {
      int handled = handle_waiting(s);
      if (handled < 0) break;
      uint64_t t = now_ns();
      if (handled > 0) deadline = t + s->spin_ns;
      if (t >= deadline || t - start >= SLICE_NS) break;
    }
  }
  session_unref(s);
}

/* The request behind a handle, to answer it: throws when it was answered already. */
static request_t *request_of(napi_env env, napi_value handle, fuse_req_t *req) {
  request_t *r = NULL;
  if (napi_get_value_external(env, handle, (void **)&r) != napi_ok || r == NULL) {
    napi_throw_type_error(env, NULL, "agentfs fuse: not a request handle");
    return NULL;
  }
  *req = take(r);
  if (*req == NULL) {
    napi_throw_error(env, NULL, "agentfs fuse: this request was answered already");
    return NULL;
  }
  return r;
}

static int args_of(napi_env env, napi_callback_info info, size_t want, napi_value *argv) {
  size_t argc = want;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < want) {
    napi_throw_type_error(env, NULL, "agentfs fuse: missing arguments");
    return 0;
  }
  return 1;
}

static double number_of(napi_env env, napi_value value) {
  double d = 0;
  napi_get_value_double(env, value, &d);
  return d;
}

/* Attributes from a Float64Array laid out as ATTR_FIELDS in src/native.ts. */
enum {
  A_INO, A_MODE, A_NLINK, A_UID, A_GID, A_RDEV, A_SIZE, A_BLOCKS, A_BLKSIZE,
  A_ATIME, A_ATIME_NS, A_MTIME, A_MTIME_NS, A_CTIME, A_CTIME_NS, A_COUNT
};

static void attr_from(const double *a, struct stat *st);

static int attr_of(napi_env env, napi_value value, struct stat *st) {
  napi_typedarray_type type;
  size_t length;
  void *data;
  if (napi_get_typedarray_info(env, value, &type, &length, &data, NULL, NULL) != napi_ok ||
      type != napi_float64_array || length < A_COUNT) {
    napi_throw_type_error(env, NULL, "agentfs fuse: attributes must be a Float64Array(15)");
    return 0;
  }
  attr_from(data, st);
  return 1;
}

static void attr_from(const double *a, struct stat *st) {
  memset(st, 0, sizeof(*st));
  st->st_ino = (ino_t)a[A_INO];
  st->st_mode = (mode_t)a[A_MODE];
  st->st_nlink = (nlink_t)a[A_NLINK];
  st->st_uid = (uid_t)a[A_UID];
  st->st_gid = (gid_t)a[A_GID];
  st->st_rdev = (dev_t)a[A_RDEV];
  st->st_size = (off_t)a[A_SIZE];
  st->st_blocks = (blkcnt_t)a[A_BLOCKS];
  st->st_blksize = (blksize_t)a[A_BLKSIZE];
  st->st_atim.tv_sec = (time_t)a[A_ATIME];
  st->st_atim.tv_nsec = (long)a[A_ATIME_NS];
  st->st_mtim.tv_sec = (time_t)a[A_MTIME];
  st->st_mtim.tv_nsec = (long)a[A_MTIME_NS];
  st->st_ctim.tv_sec = (time_t)a[A_CTIME];
  st->st_ctim.tv_nsec = (long)a[A_CTIME_NS];
}

/* After a reply: a failed one means the kernel went away (unmounted), which the loop reports. */
static napi_value done(napi_env env, request_t *r, int result) {
  (void)result;
  answered(r);
  napi_value undefined;
  napi_get_undefined(env, &undefined);
  return undefined;
}

/* replyError(handle, errno): errno 0 answers success for requests with no data. */
static napi_value reply_error(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  fuse_req_t req;
  if (!args_of(env, info, 2, argv)) return NULL;
  request_t *r = request_of(env, argv[0], &req);
  if (r == NULL) return NULL;
  return done(env, r, fuse_reply_err(req, (int)number_of(env, argv[1])));
}

static void entry_of(napi_env env, napi_value *argv, struct fuse_entry_param *e, int *ok) {
  memset(e, 0, sizeof(*e));
  e->ino = (fuse_ino_t)number_of(env, argv[1]);
  *ok = attr_of(env, argv[2], &e->attr);
  e->attr_timeout = number_of(env, argv[3]);
  e->entry_timeout = number_of(env, argv[4]);
}

/* replyEntry(handle, nodeid, attr, attrTimeout, entryTimeout) */
static napi_value reply_entry(napi_env env, napi_callback_info info) {
  napi_value argv[5];
  fuse_req_t req;
  struct fuse_entry_param e;
  int ok;
  if (!args_of(env, info, 5, argv)) return NULL;
  entry_of(env, argv, &e, &ok);
  if (!ok) return NULL;
  request_t *r = request_of(env, argv[0], &req);
  if (r == NULL) return NULL;
  return done(env, r, fuse_reply_entry(req, &e));
}

/* replyCreate(handle, nodeid, attr, attrTimeout, entryTimeout, fh, keepCache) */
static napi_value reply_create(napi_env env, napi_callback_info info) {
  napi_value argv[7];
  fuse_req_t req;
  struct fuse_entry_param e;
  struct fuse_file_info fi;
  int ok;
  if (!args_of(env, info, 7, argv)) return NULL;
  entry_of(env, argv, &e, &ok);
  if (!ok) return NULL;
  memset(&fi, 0, sizeof(fi));
  fi.fh = (uint64_t)number_of(env, argv[5]);
  fi.keep_cache = number_of(env, argv[6]) != 0;
  request_t *r = request_of(env, argv[0], &req);
  if (r == NULL) return NULL;
  return done(env, r, fuse_reply_create(req, &e, &fi));
}

/* replyAttr(handle, attr, attrTimeout) */
static napi_value reply_attr(napi_env env, napi_callback_info info) {
  napi_value argv[3];
  fuse_req_t req;
  struct stat st;
  if (!args_of(env, info, 3, argv)) return NULL;
  if (!attr_of(env, argv[1], &st)) return NULL;
  request_t *r = request_of(env, argv[0], &req);
  if (r == NULL) return NULL;
  return done(env, r, fuse_reply_attr(req, &st, number_of(env, argv[2])));
}

/* replyReadlink(handle, target) */
static napi_value reply_readlink(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  fuse_req_t req;
  char *target;
  size_t length;
  if (!args_of(env, info, 2, argv)) return NULL;
  if (napi_get_value_string_utf8(env, argv[1], NULL, 0, &length) != napi_ok) {
    napi_throw_type_error(env, NULL, "agentfs fuse: a link target must be a string");
    return NULL;
  }
  target = malloc(length + 1);
  if (target == NULL) {
    napi_throw_error(env, NULL, "agentfs fuse: out of memory");
    return NULL;
  }
  napi_get_value_string_utf8(env, argv[1], target, length + 1, &length);
  request_t *r = request_of(env, argv[0], &req);
  if (r == NULL) {
    free(target);
    return NULL;
  }
  int result = fuse_reply_readlink(req, target);
  free(target);
  return done(env, r, result);
}

/* replyOpen(handle, fh, keepCache) */
static napi_value reply_open(napi_env env, napi_callback_info info) {
  napi_value argv[3];
  fuse_req_t req;
  struct fuse_file_info fi;
  if (!args_of(env, info, 3, argv)) return NULL;
  memset(&fi, 0, sizeof(fi));
  fi.fh = (uint64_t)number_of(env, argv[1]);
  fi.keep_cache = number_of(env, argv[2]) != 0;
  request_t *r = request_of(env, argv[0], &req);
  if (r == NULL) return NULL;
  return done(env, r, fuse_reply_open(req, &fi));
}

/* replyWrite(handle, count) */
static napi_value reply_write(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  fuse_req_t req;
  if (!args_of(env, info, 2, argv)) return NULL;
  request_t *r = request_of(env, argv[0], &req);
  if (r == NULL) return NULL;
  return done(env, r, fuse_reply_write(req, (size_t)number_of(env, argv[1])));
}

/* replyBuffer(handle, buffer, length) */
static napi_value reply_buffer(napi_env env, napi_callback_info info) {
  napi_value argv[3];
  fuse_req_t req;
  void *data;
  size_t length;
  if (!args_of(env, info, 3, argv)) return NULL;
  if (napi_get_buffer_info(env, argv[1], &data, &length) != napi_ok) {
    napi_throw_type_error(env, NULL, "agentfs fuse: data must be a Buffer");
    return NULL;
  }
  double want = number_of(env, argv[2]);
  if (want >= 0 && want < (double)length) length = (size_t)want;
  request_t *r = request_of(env, argv[0], &req);
  if (r == NULL) return NULL;
  return done(env, r, fuse_reply_buf(req, data, length));
}

/* replyStatfs(handle, Float64Array[bsize, frsize, blocks, bfree, bavail, files, ffree, namemax]) */
static napi_value reply_statfs(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  fuse_req_t req;
  napi_typedarray_type type;
  size_t length;
  void *data;
  if (!args_of(env, info, 2, argv)) return NULL;
  if (napi_get_typedarray_info(env, argv[1], &type, &length, &data, NULL, NULL) != napi_ok ||
      type != napi_float64_array || length < 8) {
    napi_throw_type_error(env, NULL, "agentfs fuse: statfs must be a Float64Array(8)");
    return NULL;
  }
  const double *a = data;
  struct statvfs st;
  memset(&st, 0, sizeof(st));
  st.f_bsize = (unsigned long)a[0];
  st.f_frsize = (unsigned long)a[1];
  st.f_blocks = (fsblkcnt_t)a[2];
  st.f_bfree = (fsblkcnt_t)a[3];
  st.f_bavail = (fsblkcnt_t)a[4];
  st.f_files = (fsfilcnt_t)a[5];
  st.f_ffree = (fsfilcnt_t)a[6];
  st.f_favail = (fsfilcnt_t)a[6];
  st.f_namemax = (unsigned long)a[7];
  request_t *r = request_of(env, argv[0], &req);
  if (r == NULL) return NULL;
  return done(env, r, fuse_reply_statfs(req, &st));
}

/*
 * A listing reply's buffer (at most 1 MiB; `size` is capped to it) and its request, taken for
 * answering; NULL with an exception thrown when either cannot be had.
 */
static char *begin_listing(napi_env env, napi_value handle, size_t *size, fuse_req_t *req,
                           request_t **r) {
  if (*size > 1 << 20) *size = 1 << 20;
  char *buffer = malloc(*size > 0 ? *size : 1);
  if (buffer == NULL) {
    napi_throw_error(env, NULL, "agentfs fuse: out of memory");
    return NULL;
  }
  *r = request_of(env, handle, req);
  if (*r == NULL) {
    free(buffer);
    return NULL;
  }
  return buffer;
}

/*
 * replyDirectory(handle, names, modes, start, size): the entries from index `start` of `names`
 * (their types from `modes`, a Float64Array), each with the offset of the next, as many as fit
 * in `size` bytes.
 */
static napi_value reply_directory(napi_env env, napi_callback_info info) {
  napi_value argv[5];
  fuse_req_t req;
  uint32_t count;
  napi_typedarray_type type;
  size_t modes_length;
  void *modes_data;
  if (!args_of(env, info, 5, argv)) return NULL;
  if (napi_get_array_length(env, argv[1], &count) != napi_ok ||
      napi_get_typedarray_info(env, argv[2], &type, &modes_length, &modes_data, NULL, NULL) !=
          napi_ok ||
      type != napi_float64_array || modes_length < count) {
    napi_throw_type_error(env, NULL, "agentfs fuse: names must be an array, modes a Float64Array");
    return NULL;
  }
  const double *modes = modes_data;
  size_t start = (size_t)number_of(env, argv[3]);
  size_t size = (size_t)number_of(env, argv[4]);
  request_t *r;
  char *buffer = begin_listing(env, argv[0], &size, &req, &r);
  if (buffer == NULL) return NULL;
  size_t used = 0;
  char name[1024];
  for (size_t i = start; i < count; i++) {
    napi_value item;
    size_t length;
    if (napi_get_element(env, argv[1], (uint32_t)i, &item) != napi_ok ||
        napi_get_value_string_utf8(env, item, name, sizeof(name), &length) != napi_ok)
      break;
    if (length > 255 || length == 0) continue; /* no name the kernel takes: left out */
    struct stat st;
    memset(&st, 0, sizeof(st));
    st.st_ino = 0xffffffff; /* as libfuse says an unknown inode; lookup gives the real one */
    st.st_mode = (mode_t)modes[i];
    size_t need = fuse_add_direntry(req, buffer + used, size - used, name, &st, (off_t)(i + 1));
    if (need > size - used) break;
    used += need;
  }
  int result = fuse_reply_buf(req, buffer, used);
  free(buffer);
  return done(env, r, result);
}

/*
 * replyDirectoryPlus(handle, names, nodeids, attrs, first, size, attrTimeout, entryTimeout): the
 * entries of `names` (a window of a listing whose first entry is the listing's entry `first`), as
 * many as fit in `size` bytes, each with its node id and attributes (`attrs` holds A_COUNT
 * numbers per entry) and the offset of the next. An entry with node id 0 gives the kernel its
 * name and type only. Returns how many entries were sent: the kernel counts one lookup for each
 * sent entry with a node id, but `.` and `..`.
 */
static napi_value reply_directory_plus(napi_env env, napi_callback_info info) {
  napi_value argv[8], result;
  fuse_req_t req;
  uint32_t count;
  napi_typedarray_type type;
  size_t ids_length, attrs_length;
  void *ids_data, *attrs_data;
  if (!args_of(env, info, 8, argv)) return NULL;
  if (napi_get_array_length(env, argv[1], &count) != napi_ok ||
      napi_get_typedarray_info(env, argv[2], &type, &ids_length, &ids_data, NULL, NULL) !=
          napi_ok ||
      type != napi_float64_array || ids_length < count ||
      napi_get_typedarray_info(env, argv[3], &type, &attrs_length, &attrs_data, NULL, NULL) !=
          napi_ok ||
      type != napi_float64_array || attrs_length < (size_t)count * A_COUNT) {
    napi_throw_type_error(env, NULL,
                          "agentfs fuse: names must be an array, nodeids and attrs Float64Arrays");
    return NULL;
  }
  const double *ids = ids_data;
  const double *attrs = attrs_data;
  size_t first = (size_t)number_of(env, argv[4]);
  size_t size = (size_t)number_of(env, argv[5]);
  double attr_timeout = number_of(env, argv[6]);
  double entry_timeout = number_of(env, argv[7]);
  request_t *r;
  char *buffer = begin_listing(env, argv[0], &size, &req, &r);
  if (buffer == NULL) return NULL;
  size_t used = 0, i;
  char name[1024];
  for (i = 0; i < count; i++) {
    napi_value item;
    size_t length;
    if (napi_get_element(env, argv[1], (uint32_t)i, &item) != napi_ok ||
        napi_get_value_string_utf8(env, item, name, sizeof(name), &length) != napi_ok)
      break;
    struct fuse_entry_param e;
    memset(&e, 0, sizeof(e));
    attr_from(attrs + (size_t)i * A_COUNT, &e.attr);
    e.ino = (fuse_ino_t)ids[i];
    if (length > 255 || length == 0) {
      if (e.ino != 0) break; /* a counted entry cannot be skipped: JavaScript sends none */
      continue;
    }
    e.attr_timeout = attr_timeout;
    e.entry_timeout = entry_timeout;
    size_t need =
        fuse_add_direntry_plus(req, buffer + used, size - used, name, &e, (off_t)(first + i + 1));
    if (need > size - used) break;
    used += need;
  }
  fuse_reply_buf(req, buffer, used);
  free(buffer);
  answered(r);
  napi_create_double(env, (double)i, &result);
  return result;
}

/* ---- mounting ---- */

/*
 * mount(mountpoint, options, dispatch, features): mounts and starts reading requests on this
 * thread's event loop. `options` is the comma-separated -o list, `features` FEATURE_* bits.
 * Returns the session handle.
 */
static napi_value js_mount(napi_env env, napi_callback_info info) {
  napi_value argv[4], handle, name, resource;
  char mountpoint[4096], options[4096];
  size_t length;
  uv_loop_t *loop;
  if (!args_of(env, info, 4, argv)) return NULL;
  if (napi_get_value_string_utf8(env, argv[0], mountpoint, sizeof(mountpoint), &length) !=
          napi_ok ||
      length >= sizeof(mountpoint) - 1 ||
      napi_get_value_string_utf8(env, argv[1], options, sizeof(options), &length) != napi_ok ||
      length >= sizeof(options) - 1) {
    napi_throw_type_error(env, NULL, "agentfs fuse: mountpoint and options must be short strings");
    return NULL;
  }
  CHECK(napi_get_uv_event_loop(env, &loop));
  char *args_v[] = {"agentfs", "-o", options, NULL};
  struct fuse_args args = FUSE_ARGS_INIT(options[0] != '\0' ? 3 : 1, args_v);
  session_t *s = calloc(1, sizeof(session_t));
  if (s == NULL) {
    napi_throw_error(env, NULL, "agentfs fuse: out of memory");
    return NULL;
  }
  s->env = env;
  s->refs = 1;
  s->holders = 1;
  pthread_mutex_init(&s->notices_lock, NULL);
  pthread_cond_init(&s->notices_ready, NULL);
  s->features = (int)number_of(env, argv[3]);
  const char *spin = getenv("AGENTFS_FUSE_SPIN_US");
  s->spin_ns = (spin != NULL ? strtoull(spin, NULL, 10) : 50) * 1000u;
  s->se = fuse_session_new(&args, &OPERATIONS, sizeof(OPERATIONS), s);
  if (s->se == NULL) {
    pthread_mutex_destroy(&s->notices_lock);
    pthread_cond_destroy(&s->notices_ready);
    free(s);
    napi_throw_error(env, "EINVAL", "agentfs fuse: libfuse refused the mount options");
    return NULL;
  }
  if (fuse_session_mount(s->se, mountpoint) != 0) {
    int saved = errno;
    fuse_session_destroy(s->se);
    pthread_mutex_destroy(&s->notices_lock);
    pthread_cond_destroy(&s->notices_ready);
    free(s);
    char message[4400];
    snprintf(message, sizeof(message), "agentfs fuse: cannot mount at %s (%s)", mountpoint,
             saved != 0 ? strerror(saved) : "see the message above");
    napi_throw_error(env, "EMOUNT", message);
    return NULL;
  }
  int fd = fuse_session_fd(s->se);
  napi_create_string_utf8(env, "agentfs fuse", NAPI_AUTO_LENGTH, &name);
  napi_create_object(env, &resource);
  if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) != 0 ||
      napi_create_reference(env, argv[2], 1, &s->dispatch) != napi_ok ||
      napi_create_reference(env, resource, 1, &s->resource) != napi_ok ||
      napi_async_init(env, resource, name, &s->context) != napi_ok ||
      uv_poll_init(loop, &s->poll, fd) != 0) {
    fuse_session_unmount(s->se);
    fuse_session_destroy(s->se);
    pthread_mutex_destroy(&s->notices_lock);
    pthread_cond_destroy(&s->notices_ready);
    free(s);
    napi_throw_error(env, NULL, "agentfs fuse: cannot poll the FUSE device");
    return NULL;
  }
  s->poll.data = s;
  s->mountpoint = strdup(mountpoint);
  s->loop_running = 1;
  uv_poll_start(&s->poll, UV_READABLE, on_readable);
  CHECK(napi_create_external(env, s, NULL, NULL, &handle));
  return handle;
}

/*
 * unmount(session): takes the mount away (lazily, as `umount -l`: a busy mountpoint does not keep
 * it) and ends the session, which is reported to dispatch as OP_ENDED. The device is closed once
 * every request handed out has been answered; calls still in the mount then fail (ENOTCONN).
 */
static napi_value js_unmount(napi_env env, napi_callback_info info) {
  napi_value argv[1], undefined;
  session_t *s = NULL;
  if (!args_of(env, info, 1, argv)) return NULL;
  if (napi_get_value_external(env, argv[0], (void **)&s) != napi_ok || s == NULL) {
    napi_throw_type_error(env, NULL, "agentfs fuse: not a session");
    return NULL;
  }
  napi_get_undefined(env, &undefined);
  if (!s->loop_running || s->mountpoint == NULL) return undefined;
  fuse_session_exit(s->se);
  /* Root detaches it itself; others ask fusermount3. */
  if (geteuid() == 0) {
    if (umount2(s->mountpoint, MNT_DETACH) != 0 && errno != EINVAL && errno != ENOENT) {
      napi_throw_error(env, NULL, "agentfs fuse: umount2 failed");
      return NULL;
    }
  } else {
    pid_t pid;
    char *argv_u[] = {"fusermount3", "-u", "-q", "-z", "--", s->mountpoint, NULL};
    if (posix_spawnp(&pid, "fusermount3", NULL, NULL, argv_u, environ) == 0) {
      int status;
      waitpid(pid, &status, 0);
    }
  }
  end_session(s, 0);
  return undefined;
}

/* The notifier: sends queued invalidations one by one until the session ends. */
static void *notifier(void *data) {
  session_t *s = data;
  pthread_mutex_lock(&s->notices_lock);
  for (;;) {
    while (s->notices == NULL && !s->notifier_stop)
      pthread_cond_wait(&s->notices_ready, &s->notices_lock);
    if (s->notifier_stop) break;
    notice_t *n = s->notices;
    s->notices = n->next;
    if (s->notices == NULL) s->notices_tail = NULL;
    pthread_mutex_unlock(&s->notices_lock);
    /* ENOENT (the kernel has nothing cached for it) and errors after an unmount are fine. */
    if (n->name != NULL)
      fuse_lowlevel_notify_inval_entry(s->se, n->ino, n->name, n->length);
    else
      fuse_lowlevel_notify_inval_inode(s->se, n->ino, 0, 0);
    free(n->name);
    free(n);
    pthread_mutex_lock(&s->notices_lock);
  }
  s->notifier_running = 0;
  pthread_mutex_unlock(&s->notices_lock);
  session_release(s);
  return NULL;
}

/* Queues an invalidation (name NULL: the inode's); starts the notifier on first use. */
static int queue_notice(session_t *s, fuse_ino_t ino, const char *name, size_t length) {
  if (!s->loop_running) return -ENOTCONN;
  notice_t *n = calloc(1, sizeof(notice_t));
  if (n == NULL) return -ENOMEM;
  n->ino = ino;
  n->length = length;
  if (name != NULL && (n->name = malloc(length + 1)) == NULL) {
    free(n);
    return -ENOMEM;
  }
  if (name != NULL) {
    memcpy(n->name, name, length);
    n->name[length] = '\0';
  }
  pthread_mutex_lock(&s->notices_lock);
  if (!s->notifier_running && !s->notifier_stop) {
    pthread_t thread;
    __atomic_add_fetch(&s->holders, 1, __ATOMIC_ACQ_REL);
    if (pthread_create(&thread, NULL, notifier, s) != 0) {
      pthread_mutex_unlock(&s->notices_lock);
      __atomic_sub_fetch(&s->holders, 1, __ATOMIC_ACQ_REL);
      free(n->name);
      free(n);
      return -EAGAIN;
    }
    pthread_detach(thread);
    s->notifier_running = 1;
  }
  if (s->notices_tail != NULL) s->notices_tail->next = n;
  else s->notices = n;
  s->notices_tail = n;
  pthread_cond_signal(&s->notices_ready);
  pthread_mutex_unlock(&s->notices_lock);
  return 0;
}

/*
 * notifyInvalidate(session, nodeid): queues dropping the kernel's cached attributes and data of
 * nodeid. Returns 0 when queued, a negative errno otherwise.
 */
static napi_value notify_invalidate(napi_env env, napi_callback_info info) {
  napi_value argv[2], result;
  session_t *s = NULL;
  if (!args_of(env, info, 2, argv)) return NULL;
  if (napi_get_value_external(env, argv[0], (void **)&s) != napi_ok || s == NULL) {
    napi_throw_type_error(env, NULL, "agentfs fuse: not a session");
    return NULL;
  }
  napi_create_int32(env, queue_notice(s, (fuse_ino_t)number_of(env, argv[1]), NULL, 0), &result);
  return result;
}

/* notifyInvalidateEntry(session, parent, name): queues dropping the kernel's cached name. */
static napi_value notify_invalidate_entry(napi_env env, napi_callback_info info) {
  napi_value argv[3], result;
  session_t *s = NULL;
  char name[1024];
  size_t length;
  if (!args_of(env, info, 3, argv)) return NULL;
  if (napi_get_value_external(env, argv[0], (void **)&s) != napi_ok || s == NULL ||
      napi_get_value_string_utf8(env, argv[2], name, sizeof(name), &length) != napi_ok ||
      length == 0 || length > 255) {
    napi_throw_type_error(env, NULL, "agentfs fuse: a session and a name of 1 to 255 bytes");
    return NULL;
  }
  napi_create_int32(
      env, queue_notice(s, (fuse_ino_t)number_of(env, argv[1]), name, length), &result);
  return result;
}

static napi_value version(napi_env env, napi_callback_info info) {
  (void)info;
  napi_value result;
  napi_create_int32(env, fuse_version(), &result);
  return result;
}

#define EXPORT(name, fn)                                                     \
  do {                                                                       \
    napi_value f;                                                            \
    CHECK(napi_create_function(env, name, NAPI_AUTO_LENGTH, fn, NULL, &f)); \
    CHECK(napi_set_named_property(env, exports, name, f));                   \
  } while (0)

static napi_value init(napi_env env, napi_value exports) {
  EXPORT("mount", js_mount);
  EXPORT("unmount", js_unmount);
  EXPORT("notifyInvalidate", notify_invalidate);
  EXPORT("notifyInvalidateEntry", notify_invalidate_entry);
  EXPORT("replyError", reply_error);
  EXPORT("replyEntry", reply_entry);
  EXPORT("replyCreate", reply_create);
  EXPORT("replyAttr", reply_attr);
  EXPORT("replyReadlink", reply_readlink);
  EXPORT("replyOpen", reply_open);
  EXPORT("replyWrite", reply_write);
  EXPORT("replyBuffer", reply_buffer);
  EXPORT("replyStatfs", reply_statfs);
  EXPORT("replyDirectory", reply_directory);
  EXPORT("replyDirectoryPlus", reply_directory_plus);
  EXPORT("version", version);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
