'use strict'
// The workspace builds one better-sqlite3 (and one better-sqlite3-multiple-ciphers, its
// encrypting build) for the running Node.js (tools/better-sqlite3*): 12.x
// installs on Node.js 20 only (it aborts on 24, and 13.x, whose engines say >=22, serves 22+).
// Deterministic, so the lockfile is the same whatever Node.js runs pnpm install.
module.exports = {
  hooks: {
    readPackage(pkg) {
      const pair = pkg.name === 'better-sqlite3' || pkg.name === 'better-sqlite3-multiple-ciphers'
      if (pair && !pkg.private && /^12\./.test(pkg.version))
        pkg.engines = { ...pkg.engines, node: '>=20.19 <22' }
      return pkg
    },
  },
}
