/* @agentfs/fuse's native parts: the shared types (see agentfs_fuse.c for the design). */
#ifndef AGENTFS_FUSE_BINDING_H
#define AGENTFS_FUSE_BINDING_H

#define FUSE_USE_VERSION 34
#define NAPI_VERSION 8
#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <node_api.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <uv.h>

/* Operation numbers, in the order of OPERATIONS in src/index.ts. */
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

/*
 * Invalidations waiting at most: the notifier can wait on a kernel lock held by a pending
 * request, and a writer elsewhere may change files faster than it sends; the kernel's own
 * timeouts still bound how stale a refused notice leaves anything.
 */
#define NOTICES_MAX 65536

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
  int notices_queued; /* at most NOTICES_MAX: past that, new notices are refused (-EAGAIN) */
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

#define CHECK(call)                                                        \
  do {                                                                     \
    if ((call) != napi_ok) {                                               \
      napi_throw_error(env, NULL, "agentfs fuse: Node-API call failed"); \
      return NULL;                                                         \
    }                                                                      \
  } while (0)

/* session.c: the session's life and the requests' way to JavaScript. */
void session_release(session_t *s);
void session_unref(session_t *s);
fuse_req_t take(request_t *r);
void answered(request_t *r);
request_t *new_request(fuse_req_t req, int op, fuse_ino_t ino);
void post(session_t *s, request_t *r);
void end_session(session_t *s, int result);
napi_value js_mount(napi_env env, napi_callback_info info);
napi_value js_unmount(napi_env env, napi_callback_info info);

/* requests.c: libfuse's request handlers. */
extern const struct fuse_lowlevel_ops agentfs_operations;

/* replies.c: answering a request from JavaScript. */
request_t *request_of(napi_env env, napi_value handle, fuse_req_t *req);
session_t *session_of(napi_env env, napi_value handle);
int args_of(napi_env env, napi_callback_info info, size_t want, napi_value *argv);
double number_of(napi_env env, napi_value value);
napi_value reply_error(napi_env env, napi_callback_info info);
napi_value reply_entry(napi_env env, napi_callback_info info);
napi_value reply_create(napi_env env, napi_callback_info info);
napi_value reply_attr(napi_env env, napi_callback_info info);
napi_value reply_readlink(napi_env env, napi_callback_info info);
napi_value reply_open(napi_env env, napi_callback_info info);
napi_value reply_write(napi_env env, napi_callback_info info);
napi_value reply_buffer(napi_env env, napi_callback_info info);
napi_value reply_statfs(napi_env env, napi_callback_info info);
napi_value reply_directory(napi_env env, napi_callback_info info);
napi_value reply_directory_plus(napi_env env, napi_callback_info info);

/* notify.c: invalidations, sent from a thread of their own. */
napi_value notify_invalidate(napi_env env, napi_callback_info info);
napi_value notify_invalidate_entry(napi_env env, napi_callback_info info);

#endif
