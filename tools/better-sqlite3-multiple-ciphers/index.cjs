'use strict'
const name = require('./select.cjs')
try {
  module.exports = require(name)
} catch (error) {
  if (error && error.code === 'MODULE_NOT_FOUND' && String(error.message).includes(`'${name}'`))
    throw new Error(
      `${name} is not installed for Node.js ${process.versions.node}: run pnpm install again with this Node.js`,
      { cause: error },
    )
  throw error
}
