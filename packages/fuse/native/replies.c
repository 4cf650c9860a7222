/* Answering requests from JavaScript: each reply takes the request's handle once. */
#include "binding.h"
#include <sys/statvfs.h>

/* The request behind a handle, to answer it: throws when it was answered already. */
request_t *request_of(napi_env env, napi_value handle, fuse_req_t *req) {
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

/* The session behind a handle: throws (and is NULL) when it is not one. */
session_t *session_of(napi_env env, napi_value handle) {
  session_t *s = NULL;
  if (napi_get_value_external(env, handle, (void **)&s) != napi_ok || s == NULL) {
    napi_throw_type_error(env, NULL, "agentfs fuse: not a session");
    return NULL;
  }
  return s;
}

int args_of(napi_env env, napi_callback_info info, size_t want, napi_value *argv) {
  size_t argc = want;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < want) {
    napi_throw_type_error(env, NULL, "agentfs fuse: missing arguments");
    return 0;
  }
  return 1;
}

double number_of(napi_env env, napi_value value) {
  double d = 0;
  napi_get_value_double(env, value, &d);
  return d;
}

/* Attributes from a Float64Array laid out as packed() in src/index.ts. */
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
napi_value reply_error(napi_env env, napi_callback_info info) {
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
napi_value reply_entry(napi_env env, napi_callback_info info) {
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
napi_value reply_create(napi_env env, napi_callback_info info) {
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
napi_value reply_attr(napi_env env, napi_callback_info info) {
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
napi_value reply_readlink(napi_env env, napi_callback_info info) {
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
napi_value reply_open(napi_env env, napi_callback_info info) {
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
napi_value reply_write(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  fuse_req_t req;
  if (!args_of(env, info, 2, argv)) return NULL;
  request_t *r = request_of(env, argv[0], &req);
  if (r == NULL) return NULL;
  return done(env, r, fuse_reply_write(req, (size_t)number_of(env, argv[1])));
}

/* replyBuffer(handle, buffer, length) */
napi_value reply_buffer(napi_env env, napi_callback_info info) {
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
napi_value reply_statfs(napi_env env, napi_callback_info info) {
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
napi_value reply_directory(napi_env env, napi_callback_info info) {
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
napi_value reply_directory_plus(napi_env env, napi_callback_info info) {
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
