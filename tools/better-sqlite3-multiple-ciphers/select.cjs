'use strict'
// Like tools/better-sqlite3: 12 aborts on Node.js 24 and 13 needs Node.js 22, so the workspace
// installs both as optional dependencies and .pnpmfile.cjs narrows 12's engines to Node.js 20:
// pnpm builds exactly the one that fits the running Node.js. This names it.
const major = Number(process.versions.node.split('.')[0])
module.exports =
  major >= 22 ? 'better-sqlite3-multiple-ciphers-13' : 'better-sqlite3-multiple-ciphers-12'
