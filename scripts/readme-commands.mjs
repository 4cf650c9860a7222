// The README's set-up commands, as printed: `.ci/run` runs them from here (so what CI runs is
// what a new user copies), and apps/cli/test/examples.test.ts checks every README block is
// either one of these or run by that test.
//   node scripts/readme-commands.mjs demo   prints the quick start's command
//   node scripts/readme-commands.mjs check  prints the test command
//   node scripts/readme-commands.mjs cli    prints the command that puts `agentfs` on PATH
import { readFile } from 'node:fs/promises'

export async function readmeCommands() {
  const readme = await readFile(new URL('../README.md', import.meta.url), 'utf8')
  const blocks = [...readme.matchAll(/^```sh\n([\s\S]*?)^```/gm)].map((m) => m[1].trim())
  const find = (script) => {
    const found = blocks.filter(
      (b) => b.startsWith('npm install -g pnpm@') && b.endsWith(` ${script}`),
    )
    if (found.length !== 1) throw new Error(`README.md: expected one block ending in \`${script}\``)
    return found[0]
  }
  const cli = blocks.filter((b) => b.startsWith('pnpm build:cli'))
  if (cli.length !== 1) throw new Error('README.md: expected one block that builds the CLI')
  return { demo: find('pnpm demo'), check: find('pnpm check'), cli: cli[0] }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const which = process.argv[2]
  const commands = await readmeCommands()
  if (!(which in commands)) {
    console.error(`usage: node scripts/readme-commands.mjs ${Object.keys(commands).join('|')}`)
    process.exit(2)
  }
  console.log(commands[which])
}
