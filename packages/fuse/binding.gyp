{
  "targets": [
    {
      "target_name": "agentfs_fuse",
      "sources": ["native/agentfs_fuse.c"],
      "cflags": ["<!@(pkg-config --cflags fuse3)", "-Wall", "-Wextra", "-Wno-unused-parameter"],
      "libraries": ["<!@(pkg-config --libs fuse3)"],
      "defines": ["NAPI_VERSION=8"]
    }
  ]
}
