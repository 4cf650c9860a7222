'use strict'
// `require('better-sqlite3-multiple-ciphers/package.json')` answers with the manifest of the build loaded
// (no version when none is installed: the require of the module itself then says what to do).
try {
  module.exports = require(`${require('./select.cjs')}/package.json`)
} catch {
  module.exports = { name: 'better-sqlite3-multiple-ciphers' }
}
