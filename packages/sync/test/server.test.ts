import { createServer } from 'node:http'
import { expect, test } from 'vitest'
import { serverExecute } from '../src/index.js'

// A server that is not a sync server, or a hostile one, gets a clear REMOTE error.
async function serving(reply: (res: import('node:http').ServerResponse) => void) {
  const server = createServer((_req, res) => reply(res))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((r) => server.close(r)) }
}

test.each([
  ['HTML', (res: import('node:http').ServerResponse) => res.end('<html>')],
  [
    'a JSON shape that is not Hrana',
    (res: import('node:http').ServerResponse) =>
      res.end(
        '{"results":[{"type":"ok","response":{"result":{"rows":[[{"type":"integer","value":"1e999"}]]}}}]}',
      ),
  ],
  ['no results', (res: import('node:http').ServerResponse) => res.end('{}')],
  [
    'HTTP 401',
    (res: import('node:http').ServerResponse) => {
      res.statusCode = 401
      res.end()
    },
  ],
])('%s: a one-line REMOTE error', async (_label, reply) => {
  const server = await serving(reply)
  try {
    const error = await serverExecute({ url: server.url }, 'SELECT 1').catch((e: unknown) => e)
    expect(error).toMatchObject({ code: 'REMOTE' })
    expect((error as Error).message).not.toContain('\n')
  } finally {
    await server.close()
  }
})

test('a url that is not http(s) or libsql is refused before any request', async () => {
  await expect(serverExecute({ url: 'file:///etc/passwd' }, 'SELECT 1')).rejects.toMatchObject({
    code: 'INVALID_ARGUMENT',
  })
})
