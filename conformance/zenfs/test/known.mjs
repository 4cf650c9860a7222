// Tests of ZenFS's suite that do not pass on AgentFS, each with its reason. The runner fails
// on any failure not listed here (and on a listed one that is not explained any more, so the
// list stays true). `skip` entries are turned off by a flag of the setup.

/** @type {{ name: string, reason: string, kind: 'fail' | 'skip', nodeBelow?: number }[]} */
export const KNOWN = [
  // ZenFS's own extended-attribute API (`fs.xattr`), which Node's fs does not have.
  ...[
    'Non-user attribute set fails',
    'set and get attributes',
    'get attributes with buffer encoding',
    'remove attributes',
    'list attributes',
    'handle create and replace options',
    'file must exist',
    'synchronous operations',
  ].map((name) => ({
    name,
    kind: 'skip',
    reason: 'fs.xattr is a ZenFS extension, not part of node:fs (flag xattr: false)',
  })),
  {
    name: 'lchmod',
    kind: 'skip',
    reason:
      'lchmod exists only on macOS; Node on Linux has none either (flag lchmod: false), and AgentFS links have no mode of their own',
  },
  {
    name: 'fchmod',
    kind: 'fail',
    reason:
      'fs.fchmodSync(handle.fd) with a FileHandle from fs.promises.open: the …Sync calls run on a worker thread and take descriptors from openSync; an async handle lives on the calling thread',
  },
  // The test helper calls Error.isError (V8 13.6, Node 24): the filesystem is not reached.
  ...['new Date(...)', 'new Date()', 'number', 'from stats', 'utimes works'].map((name) => ({
    name,
    kind: 'fail',
    nodeBelow: 24,
    reason: 'the test uses Error.isError, which Node.js before 24 does not have',
  })),
]

/** Passing tests (of the 203) the suite must keep. */
export const MIN_PASSING = 180
