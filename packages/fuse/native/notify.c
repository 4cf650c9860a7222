/* Invalidations: queued by JavaScript, sent by a thread of their own. */
#include "binding.h"

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
    s->notices_queued--;
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
  pthread_mutex_lock(&s->notices_lock);
  int full = s->notices_queued >= NOTICES_MAX;
  pthread_mutex_unlock(&s->notices_lock);
  if (full) return -EAGAIN;
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
  s->notices_queued++;
  pthread_cond_signal(&s->notices_ready);
  pthread_mutex_unlock(&s->notices_lock);
  return 0;
}

/*
 * notifyInvalidate(session, nodeid): queues dropping the kernel's cached attributes and data of
 * nodeid. Returns 0 when queued, a negative errno otherwise.
 */
napi_value notify_invalidate(napi_env env, napi_callback_info info) {
  napi_value argv[2], result;
  if (!args_of(env, info, 2, argv)) return NULL;
  session_t *s = session_of(env, argv[0]);
  if (s == NULL) return NULL;
  napi_create_int32(env, queue_notice(s, (fuse_ino_t)number_of(env, argv[1]), NULL, 0), &result);
  return result;
}

/* notifyInvalidateEntry(session, parent, name): queues dropping the kernel's cached name. */
napi_value notify_invalidate_entry(napi_env env, napi_callback_info info) {
  napi_value argv[3], result;
  char name[1024];
  size_t length;
  if (!args_of(env, info, 3, argv)) return NULL;
  session_t *s = session_of(env, argv[0]);
  if (s == NULL) return NULL;
  if (napi_get_value_string_utf8(env, argv[2], name, sizeof(name), &length) != napi_ok ||
      length == 0 || length > 255) {
    napi_throw_type_error(env, NULL, "agentfs fuse: a name of 1 to 255 bytes is needed");
    return NULL;
  }
  napi_create_int32(
      env, queue_notice(s, (fuse_ino_t)number_of(env, argv[1]), name, length), &result);
  return result;
}
