{
  "targets": [
    {
      "target_name": "agentfs_fuse",
      "sources": [
        "native/agentfs_fuse.c",
        "native/session.c",
        "native/requests.c",
        "native/replies.c",
        "native/notify.c"
      ],
      "cflags": [
        "<!@(pkg-config --cflags fuse3)",
        "-Wall",
        "-Wextra",
        "-Wno-unused-parameter",
        "-fvisibility=hidden"
      ],
      "libraries": ["<!@(pkg-config --libs fuse3)"],
      "defines": ["NAPI_VERSION=8"]
    }
  ]
}
