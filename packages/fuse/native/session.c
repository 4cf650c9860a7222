/* The session: its life, the requests' way to JavaScript, the event-loop reader, mounting. */
#include "binding.h"
#include <spawn.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static void call_js(session_t *s, request_t *r);

/* Frees the native session once neither the JavaScript side nor the notifier holds it. */
void session_release(session_t *s) {
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
void session_unref(session_t *s) {
  if (--s->refs > 0) return;
  free(s->buf.mem);
  s->buf.mem = NULL;
  napi_delete_reference(s->env, s->dispatch);
  napi_delete_reference(s->env, s->resource);
  napi_async_destroy(s->env, s->context);
  session_release(s);
}

/* Takes the request for answering: NULL when it was answered already. */
fuse_req_t take(request_t *r) {
  fuse_req_t req = r->req;
  r->req = NULL;
  return req;
}

void answered(request_t *r) { session_unref(r->session); }

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
void post(session_t *s, request_t *r) {
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

request_t *new_request(fuse_req_t req, int op, fuse_ino_t ino) {
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
void end_session(session_t *s, int result) {
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

/* ---- mounting ---- */

/*
 * mount(mountpoint, options, dispatch, features): mounts and starts reading requests on this
 * thread's event loop. `options` is the comma-separated -o list, `features` FEATURE_* bits.
 * Returns the session handle.
 */
napi_value js_mount(napi_env env, napi_callback_info info) {
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
  s->se = fuse_session_new(&args, &agentfs_operations, sizeof(agentfs_operations), s);
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
napi_value js_unmount(napi_env env, napi_callback_info info) {
  napi_value argv[1], undefined;
  if (!args_of(env, info, 1, argv)) return NULL;
  session_t *s = session_of(env, argv[0]);
  if (s == NULL) return NULL;
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
