/*
 * @agentfs/fuse: a Node-API binding of libfuse 3's low-level (inode-based) API.
 *
 * The FUSE device is read on Node's own event loop: libuv polls it, and when the kernel has
 * requests they are read (nonblocking) and decoded by libfuse on the JavaScript thread, which
 * calls the request handlers (requests.c), which call JavaScript at once (session.c). A request costs one wake-up
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
 * wait forever (notify.c). JavaScript answers through the reply functions (replies.c). This
 * file is the module's entry: what it exports.
 */
#include "binding.h"

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
