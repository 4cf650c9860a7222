/*
 * The floor of W12: the least a FUSE filesystem can cost on this machine. An in-memory tree served
 * by libfuse 3's low-level API on one thread, as `agentfs mount` is served (one event loop: after
 * each request it reads the device again for 50 µs before it waits, as the mount does), in its
 * "no open" mode (files are read and written by node, the kernel opens and closes them
 * without asking), with `default_permissions`, 1 s entry and attribute timeouts and listings that
 * carry their entries' attributes (readdirplus), as the mount has. Every handler is a few memory operations, so what W12 measures on it is the kernel's
 * round trips: a ratio of `agentfs mount` to this mount is the cost of AgentFS itself.
 *
 * Enough of POSIX for cp -r, ls -lR, grep -r, git add + commit and rm -r; not a filesystem to
 * keep anything in (no symbolic links, no limits, no files unlinked while open, no `.` and `..`
 * in listings, data freed at the last unlink). The bench builds it with `cc` and libfuse 3's
 * headers.
 *
 *   floor-fs MOUNTPOINT     prints "mounted" once mounted; SIGTERM or SIGINT unmounts.
 */
#define FUSE_USE_VERSION 34
#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

typedef struct dentry {
  char *name;
  fuse_ino_t parent, ino;
  struct dentry *hash_next;           /* the chain of its bucket in `buckets` */
  struct dentry *dir_prev, *dir_next; /* its directory's entries */
} dentry_t;

typedef struct {
  struct stat st;
  char *data; /* a regular file's bytes */
  size_t cap;
  dentry_t *entries; /* a directory's entries */
} node_t;

/* A directory listing taken at opendir: readdir offsets index it, whatever changes meanwhile. */
typedef struct {
  size_t count;
  char **names;
  struct stat *stats;
} listing_t;

static node_t *nodes;
static size_t node_count, node_cap;
#define BUCKETS (1u << 18)
static dentry_t *buckets[BUCKETS];
static const double TIMEOUT = 1.0;

static unsigned bucket_of(fuse_ino_t parent, const char *name) {
  unsigned h = 2166136261u ^ (unsigned)parent;
  while (*name != '\0') h = (h ^ (unsigned char)*name++) * 16777619u;
  return h & (BUCKETS - 1);
}

static dentry_t *find(fuse_ino_t parent, const char *name) {
  for (dentry_t *d = buckets[bucket_of(parent, name)]; d != NULL; d = d->hash_next)
    if (d->parent == parent && strcmp(d->name, name) == 0) return d;
  return NULL;
}

static void now(struct timespec *t) { clock_gettime(CLOCK_REALTIME, t); }

static void touch_dir(fuse_ino_t dir) {
  now(&nodes[dir].st.st_mtim);
  nodes[dir].st.st_ctim = nodes[dir].st.st_mtim;
}

static void add_entry(fuse_ino_t parent, const char *name, fuse_ino_t ino) {
  dentry_t *d = calloc(1, sizeof(dentry_t));
  d->name = strdup(name);
  d->parent = parent;
  d->ino = ino;
  unsigned b = bucket_of(parent, name);
  d->hash_next = buckets[b];
  buckets[b] = d;
  d->dir_next = nodes[parent].entries;
  if (d->dir_next != NULL) d->dir_next->dir_prev = d;
  nodes[parent].entries = d;
  nodes[parent].st.st_size++;
  touch_dir(parent);
}

/* Takes an entry out of its directory; drops the node's data at its last link. */
static void remove_entry(dentry_t *d) {
  dentry_t **link = &buckets[bucket_of(d->parent, d->name)];
  while (*link != d) link = &(*link)->hash_next;
  *link = d->hash_next;
  node_t *dir = &nodes[d->parent];
  if (d->dir_prev != NULL) d->dir_prev->dir_next = d->dir_next;
  else dir->entries = d->dir_next;
  if (d->dir_next != NULL) d->dir_next->dir_prev = d->dir_prev;
  dir->st.st_size--;
  touch_dir(d->parent);
  node_t *n = &nodes[d->ino];
  if (S_ISDIR(n->st.st_mode)) {
    dir->st.st_nlink--;
    n->st.st_nlink = 0;
  } else if (--n->st.st_nlink == 0) {
    free(n->data);
    n->data = NULL;
    n->cap = 0;
  }
  now(&n->st.st_ctim);
  free(d->name);
  free(d);
}

static fuse_ino_t new_node(fuse_req_t req, mode_t mode) {
  if (node_count == node_cap) {
    node_cap = node_cap == 0 ? 4096 : node_cap * 2;
    nodes = realloc(nodes, node_cap * sizeof(node_t));
  }
  fuse_ino_t ino = node_count++;
  node_t *n = &nodes[ino];
  memset(n, 0, sizeof(*n));
  const struct fuse_ctx *ctx = req != NULL ? fuse_req_ctx(req) : NULL;
  n->st.st_ino = ino;
  n->st.st_mode = mode;
  n->st.st_nlink = S_ISDIR(mode) ? 2 : 1;
  n->st.st_uid = ctx != NULL ? ctx->uid : 0;
  n->st.st_gid = ctx != NULL ? ctx->gid : 0;
  n->st.st_blksize = 4096;
  now(&n->st.st_mtim);
  n->st.st_atim = n->st.st_ctim = n->st.st_mtim;
  return ino;
}

/* The largest file the floor holds (it keeps every byte in memory). */
#define MAX_FILE ((size_t)1 << 36)

/* Makes room for `size` bytes of a file's data, new bytes zeroed: 0, or why there is none. */
static int reserve(node_t *n, size_t size) {
  if (size <= n->cap) return 0;
  if (size > MAX_FILE) return EFBIG;
  size_t cap = n->cap < 4096 ? 4096 : n->cap;
  while (cap < size) cap *= 2;
  char *data = realloc(n->data, cap);
  if (data == NULL) return ENOMEM;
  memset(data + n->cap, 0, cap - n->cap);
  n->data = data;
  n->cap = cap;
  return 0;
}

static void reply_entry(fuse_req_t req, fuse_ino_t ino) {
  struct fuse_entry_param e;
  memset(&e, 0, sizeof(e));
  e.ino = ino;
  e.attr = nodes[ino].st;
  e.attr.st_blocks = (e.attr.st_size + 511) / 512;
  e.attr_timeout = e.entry_timeout = TIMEOUT;
  fuse_reply_entry(req, &e);
}

static void reply_attr(fuse_req_t req, fuse_ino_t ino) {
  struct stat st = nodes[ino].st;
  st.st_blocks = (st.st_size + 511) / 512;
  fuse_reply_attr(req, &st, TIMEOUT);
}

/* A new name in `parent` for a new node of `mode` (or an error when the name is taken). */
static void make(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode) {
  if (find(parent, name) != NULL) {
    fuse_reply_err(req, EEXIST);
    return;
  }
  fuse_ino_t ino = new_node(req, mode);
  if (S_ISDIR(mode)) nodes[parent].st.st_nlink++;
  add_entry(parent, name, ino);
  reply_entry(req, ino);
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name) {
  dentry_t *d = find(parent, name);
  if (d != NULL) {
    reply_entry(req, d->ino);
    return;
  }
  struct fuse_entry_param e;
  memset(&e, 0, sizeof(e));
  e.entry_timeout = TIMEOUT; /* a negative entry, as the mount answers */
  fuse_reply_entry(req, &e);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  (void)fi;
  reply_attr(req, ino);
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
                       struct fuse_file_info *fi) {
  (void)fi;
  struct stat *st = &nodes[ino].st;
  if (to_set & FUSE_SET_ATTR_MODE) st->st_mode = (st->st_mode & S_IFMT) | (attr->st_mode & 07777);
  if (to_set & FUSE_SET_ATTR_UID) st->st_uid = attr->st_uid;
  if (to_set & FUSE_SET_ATTR_GID) st->st_gid = attr->st_gid;
  if (to_set & FUSE_SET_ATTR_SIZE) {
    node_t *n = &nodes[ino];
    int err = reserve(n, (size_t)attr->st_size);
    if (err != 0) {
      fuse_reply_err(req, err);
      return;
    }
    if (attr->st_size > st->st_size) memset(n->data + st->st_size, 0, attr->st_size - st->st_size);
    st->st_size = attr->st_size;
    now(&st->st_mtim);
  }
  if (to_set & FUSE_SET_ATTR_ATIME) st->st_atim = attr->st_atim;
  if (to_set & FUSE_SET_ATTR_ATIME_NOW) now(&st->st_atim);
  if (to_set & FUSE_SET_ATTR_MTIME) st->st_mtim = attr->st_mtim;
  if (to_set & FUSE_SET_ATTR_MTIME_NOW) now(&st->st_mtim);
  now(&st->st_ctim);
  reply_attr(req, ino);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
                     dev_t rdev) {
  (void)rdev;
  make(req, parent, name, mode);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode) {
  make(req, parent, name, S_IFDIR | (mode & 07777));
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t parent, const char *name) {
  if (find(parent, name) != NULL) {
    fuse_reply_err(req, EEXIST);
    return;
  }
  nodes[ino].st.st_nlink++;
  now(&nodes[ino].st.st_ctim);
  add_entry(parent, name, ino);
  reply_entry(req, ino);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name) {
  dentry_t *d = find(parent, name);
  if (d == NULL) fuse_reply_err(req, ENOENT);
  else if (S_ISDIR(nodes[d->ino].st.st_mode)) fuse_reply_err(req, EISDIR);
  else {
    remove_entry(d);
    fuse_reply_err(req, 0);
  }
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name) {
  dentry_t *d = find(parent, name);
  if (d == NULL) fuse_reply_err(req, ENOENT);
  else if (!S_ISDIR(nodes[d->ino].st.st_mode)) fuse_reply_err(req, ENOTDIR);
  else if (nodes[d->ino].entries != NULL) fuse_reply_err(req, ENOTEMPTY);
  else {
    remove_entry(d);
    fuse_reply_err(req, 0);
  }
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
                      const char *newname, unsigned int flags) {
  dentry_t *from = find(parent, name);
  if (from == NULL) {
    fuse_reply_err(req, ENOENT);
    return;
  }
  if (flags != 0) {
    fuse_reply_err(req, EINVAL);
    return;
  }
  fuse_ino_t ino = from->ino;
  if (parent == newparent && strcmp(name, newname) == 0) {
    fuse_reply_err(req, 0);
    return;
  }
  dentry_t *to = find(newparent, newname);
  if (to != NULL) {
    node_t *target = &nodes[to->ino];
    if (S_ISDIR(target->st.st_mode) && target->entries != NULL) {
      fuse_reply_err(req, ENOTEMPTY);
      return;
    }
    remove_entry(to);
  }
  int dir = S_ISDIR(nodes[ino].st.st_mode);
  nodes[ino].st.st_nlink++; /* the entry's removal below must not free it */
  remove_entry(from);
  nodes[ino].st.st_nlink--;
  if (dir) {
    nodes[ino].st.st_nlink = 2;
    nodes[newparent].st.st_nlink++;
  }
  add_entry(newparent, newname, ino);
  fuse_reply_err(req, 0);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                    struct fuse_file_info *fi) {
  (void)fi;
  node_t *n = &nodes[ino];
  if (off >= n->st.st_size) {
    fuse_reply_buf(req, NULL, 0);
    return;
  }
  if ((off_t)(off + size) > n->st.st_size) size = (size_t)(n->st.st_size - off);
  fuse_reply_buf(req, n->data + off, size);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
                     struct fuse_file_info *fi) {
  (void)fi;
  node_t *n = &nodes[ino];
  size_t end = (size_t)off + size;
  int err = reserve(n, end);
  if (err != 0) {
    fuse_reply_err(req, err);
    return;
  }
  memcpy(n->data + off, buf, size);
  if ((off_t)end > n->st.st_size) n->st.st_size = (off_t)end;
  now(&n->st.st_mtim);
  n->st.st_ctim = n->st.st_mtim;
  fuse_reply_write(req, size);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  (void)ino;
  (void)fi;
  fuse_reply_err(req, ENOSYS); /* the "no open" mode */
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  listing_t *l = calloc(1, sizeof(listing_t));
  for (dentry_t *d = nodes[ino].entries; d != NULL; d = d->dir_next) l->count++;
  l->names = calloc(l->count + 1, sizeof(char *));
  l->stats = calloc(l->count + 1, sizeof(struct stat));
  size_t i = 0;
  for (dentry_t *d = nodes[ino].entries; d != NULL; d = d->dir_next, i++) {
    l->names[i] = strdup(d->name);
    l->stats[i].st_ino = d->ino;
    l->stats[i].st_mode = nodes[d->ino].st.st_mode;
  }
  fi->fh = (uint64_t)(uintptr_t)l;
  fuse_reply_open(req, fi);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                       struct fuse_file_info *fi) {
  (void)ino;
  listing_t *l = (listing_t *)(uintptr_t)fi->fh;
  char *buf = malloc(size);
  size_t used = 0;
  for (size_t i = (size_t)off; i < l->count; i++) {
    size_t need = fuse_add_direntry(req, buf + used, size - used, l->names[i], &l->stats[i],
                                    (off_t)(i + 1));
    if (need > size - used) break;
    used += need;
  }
  fuse_reply_buf(req, buf, used);
  free(buf);
}

/* Entries with their attributes, as the mount lists: the kernel needs no lookup per name. */
static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                           struct fuse_file_info *fi) {
  (void)ino;
  listing_t *l = (listing_t *)(uintptr_t)fi->fh;
  char *buf = malloc(size);
  if (buf == NULL) {
    fuse_reply_err(req, ENOMEM);
    return;
  }
  size_t used = 0;
  for (size_t i = (size_t)off; i < l->count; i++) {
    struct fuse_entry_param e;
    memset(&e, 0, sizeof(e));
    e.ino = l->stats[i].st_ino;
    e.attr = nodes[e.ino].st;
    e.attr_timeout = TIMEOUT;
    e.entry_timeout = TIMEOUT;
    size_t need =
        fuse_add_direntry_plus(req, buf + used, size - used, l->names[i], &e, (off_t)(i + 1));
    if (need > size - used) break;
    used += need;
  }
  fuse_reply_buf(req, buf, used);
  free(buf);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  (void)ino;
  listing_t *l = (listing_t *)(uintptr_t)fi->fh;
  for (size_t i = 0; i < l->count; i++) free(l->names[i]);
  free(l->names);
  free(l->stats);
  free(l);
  fuse_reply_err(req, 0);
}

static const struct fuse_lowlevel_ops operations = {
    .lookup = op_lookup,
    .getattr = op_getattr,
    .setattr = op_setattr,
    .mknod = op_mknod,
    .mkdir = op_mkdir,
    .unlink = op_unlink,
    .rmdir = op_rmdir,
    .rename = op_rename,
    .link = op_link,
    .open = op_open,
    .read = op_read,
    .write = op_write,
    .opendir = op_opendir,
    .readdir = op_readdir,
    .readdirplus = op_readdirplus,
    .releasedir = op_releasedir,
};

static long elapsed_ns(const struct timespec *since) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (t.tv_sec - since->tv_sec) * 1000000000L + (t.tv_nsec - since->tv_nsec);
}

/*
 * Serves requests until unmounted. After each one the device is read again for SPIN_NS before
 * the thread waits in poll(): the program usually sends its next request within microseconds,
 * and catching it spares the wake-up of this thread.
 */
#define SPIN_NS 50000L
static int serve(struct fuse_session *se) {
  int fd = fuse_session_fd(se);
  struct fuse_buf buf = {0};
  if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) != 0) return -errno;
  while (!fuse_session_exited(se)) {
    struct pollfd readable = {.fd = fd, .events = POLLIN};
    if (poll(&readable, 1, -1) < 0 && errno != EINTR) return -errno;
    struct timespec last;
    clock_gettime(CLOCK_MONOTONIC, &last);
    while (!fuse_session_exited(se)) {
      int res = fuse_session_receive_buf(se, &buf);
      if (res == -EAGAIN || res == -EINTR) {
        if (elapsed_ns(&last) > SPIN_NS) break;
        continue;
      }
      if (res <= 0) {
        free(buf.mem);
        return res == -ENODEV ? 0 : res;
      }
      fuse_session_process_buf(se, &buf);
      clock_gettime(CLOCK_MONOTONIC, &last);
    }
  }
  free(buf.mem);
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: floor-fs MOUNTPOINT\n");
    return 2;
  }
  new_node(NULL, 0); /* node 0 is no node */
  fuse_ino_t root = new_node(NULL, S_IFDIR | 0755);
  if (root != FUSE_ROOT_ID) return 1;
  char *args_v[] = {argv[0], "-o", "default_permissions,fsname=floor-fs,subtype=floor", NULL};
  struct fuse_args args = FUSE_ARGS_INIT(3, args_v);
  struct fuse_session *se = fuse_session_new(&args, &operations, sizeof(operations), NULL);
  if (se == NULL || fuse_set_signal_handlers(se) != 0 || fuse_session_mount(se, argv[1]) != 0)
    return 1;
  printf("mounted\n");
  fflush(stdout);
  int result = serve(se);
  fuse_session_unmount(se);
  fuse_remove_signal_handlers(se);
  fuse_session_destroy(se);
  return result < 0 ? 1 : 0;
}
