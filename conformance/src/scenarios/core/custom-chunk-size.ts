import type { Scenario } from '../../harness.js'

export const customChunkSize: Scenario = {
  id: 'core/custom-chunk-size',
  description: 'a new database created with chunk_size 65536',
  chunkSize: 65536,
  async run({ db }) {
    return { chunkSize: db.chunkSize }
  },
}
