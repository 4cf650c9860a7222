import type { Command } from 'commander'

/** Per-command help: a description where registration left none, and examples. */
const HELP: Record<string, { description?: string; examples: string[] }> = {
  init: {
    examples: [
      'agentfs init my-agent                 # .agentfs/my-agent.db',
      'agentfs init ./data/agent.db --chunk-size 65536',
      'agentfs init --compress logs-agent          # file content stored zstd-compressed',
      'agentfs init session.db --base ./project   # copy-on-write view of ./project',
      'agentfs init --sync-url libsql://agents-org.turso.io agent-a   # token: $AGENTFS_SYNC_TOKEN',
      '(umask 077; openssl rand -hex 32 > db.key) && agentfs init --key-file db.key secret-agent   # encrypted at rest',
    ],
  },
  'fs ls': {
    description: 'list a directory',
    examples: [
      'agentfs fs ls my-agent /notes',
      'agentfs fs ls -l my-agent',
      'agentfs fs ls --json my-agent /',
    ],
  },
  'fs tree': {
    description: 'draw the tree under a directory',
    examples: ['agentfs fs tree my-agent /src'],
  },
  'fs cat': { description: 'print a file', examples: ['agentfs fs cat my-agent /notes/todo.md'] },
  'fs write': {
    examples: [
      "agentfs fs write my-agent /notes/todo.md '# Todo'",
      "agentfs fs write -m 'add the release checklist' my-agent /notes/todo.md '# Release'",
      'cat report.pdf | agentfs fs write my-agent /inbox/report.pdf',
    ],
  },
  'fs mkdir': {
    description: 'create a directory',
    examples: ['agentfs fs mkdir -p my-agent /a/b/c'],
  },
  'fs rm': {
    description: 'remove a file, or a tree with -r',
    examples: ['agentfs fs rm my-agent /tmp.txt', 'agentfs fs rm -rf my-agent /build'],
  },
  'fs mv': {
    description: 'rename or move',
    examples: ['agentfs fs mv my-agent /draft.md /final.md'],
  },
  'fs cp': {
    description: 'copy a file, or a tree with -r',
    examples: [
      'agentfs fs cp my-agent /a.txt /b.txt',
      'agentfs fs cp -r my-agent /src /src-backup',
    ],
  },
  'fs ln': {
    description: 'create a hard link, or a symbolic link with -s',
    examples: [
      'agentfs fs ln -s my-agent /notes/todo.md /todo',
      'agentfs fs ln my-agent /a.txt /hard.txt',
    ],
  },
  'fs stat': {
    description: 'show metadata (type, mode, size, times, links, version)',
    examples: ['agentfs fs stat my-agent /notes/todo.md', 'agentfs fs stat --json my-agent /'],
  },
  import: {
    examples: [
      'agentfs import ./docs my-agent',
      'agentfs import ./project fresh.db   # creates fresh.db',
    ],
  },
  export: { examples: ['agentfs export my-agent ./snapshot'] },
  'kv get': {
    description: 'print the JSON value of a key',
    examples: ['agentfs kv get my-agent user:prefs'],
  },
  'kv set': {
    examples: [
      'agentfs kv set my-agent user:prefs \'{"theme":"dark"}\'',
      'agentfs kv set my-agent note "plain text is stored as a string"',
    ],
  },
  'kv rm': { description: 'delete a key', examples: ['agentfs kv rm my-agent note'] },
  'kv ls': {
    description: 'list keys (and values), optionally under a prefix',
    examples: ['agentfs kv ls my-agent', 'agentfs kv ls --json my-agent user:'],
  },
  timeline: {
    examples: [
      'agentfs timeline my-agent --limit 20',
      'agentfs timeline my-agent --errors --since 2026-11-01',
      'agentfs timeline my-agent --session s-42 --name edit_file --json',
      'agentfs timeline my-agent --name bash --full',
      'agentfs timeline my-agent --changes --limit 5',
    ],
  },
  reconcile: {
    examples: [
      'agentfs reconcile my-agent --older-than 3600000',
      'agentfs reconcile --json my-agent --older-than 0',
    ],
  },
  payloads: {
    examples: ['agentfs payloads my-agent', 'agentfs payloads my-agent --budget 2GiB'],
  },
  stats: { examples: ['agentfs stats my-agent', 'agentfs stats --json my-agent'] },
  info: { examples: ['agentfs info my-agent', 'agentfs info --json ./agent.db'] },
  fsck: {
    examples: [
      'agentfs fsck my-agent',
      'agentfs fsck --repair my-agent',
      'agentfs fsck --json my-agent',
    ],
  },
  verify: {
    examples: [
      'agentfs verify --seal --head my-agent > head.txt',
      'agentfs verify my-agent --expect-head "$(cat head.txt)"',
      'openssl rand -hex 32 > audit.key && AGENTFS_AUDIT_KEY_FILE=audit.key agentfs fs write agent.db /a.txt sealed',
      'agentfs verify --key-file audit.key --json agent.db',
    ],
  },
  migrate: {
    examples: ['agentfs migrate --dry-run old-agent.db', 'agentfs migrate old-agent.db'],
  },
  encrypt: {
    examples: [
      '(umask 077; openssl rand -hex 32 > db.key) && agentfs encrypt --key-file db.key agent.db && agentfs fs ls --key-file db.key agent.db /',
      'agentfs init notes.db && (umask 077; openssl rand -hex 32 > notes.key) && AGENTFS_KEY_FILE=notes.key agentfs encrypt notes.db && AGENTFS_KEY_FILE=notes.key agentfs info notes.db',
    ],
  },
  decrypt: {
    examples: [
      '(umask 077; openssl rand -hex 32 > db.key) && agentfs encrypt --key-file db.key agent.db && agentfs decrypt --key-file db.key agent.db',
    ],
  },
  rekey: {
    examples: [
      '(umask 077; openssl rand -hex 32 > old.key; openssl rand -hex 32 > new.key) && agentfs encrypt --key-file old.key agent.db && agentfs rekey --key-file old.key --new-key-file new.key agent.db',
      'agentfs init r.db && (umask 077; openssl rand -hex 32 > r.key) && agentfs encrypt --key-file r.key r.db && agentfs rekey --key-file r.key --new-key-file r.key --new-cipher chacha20 r.db',
    ],
  },
  diff: {
    examples: [
      'agentfs diff session.db',
      'agentfs diff --json session.db',
      'agentfs snapshot my-agent v1 && agentfs fs write my-agent /a.txt b && agentfs diff my-agent --from v1',
    ],
  },
  log: {
    examples: [
      'agentfs log my-agent',
      'agentfs log my-agent /notes --json',
      'agentfs log my-agent --limit 5',
      'agentfs log my-agent --tx 42',
      'agentfs log my-agent --call 7',
    ],
  },
  history: {
    examples: ['agentfs history my-agent /notes/todo.md'],
  },
  search: {
    examples: [
      'agentfs search my-agent retry budget',
      'agentfs search my-agent \'"max retries"\' --path /src --limit 5',
      'agentfs search my-agent conf* --json',
      "agentfs search my-agent --settings --exclude 'node_modules/**' --max-file-size 1MiB",
      'agentfs search my-agent --update   # index now, before the file goes to read-only readers',
    ],
  },
  undelete: {
    examples: [
      'agentfs undelete my-agent / --list',
      'agentfs snapshot my-agent kept-1 && agentfs fs rm my-agent /tmp.txt && agentfs undelete my-agent /tmp.txt',
      "agentfs snapshot my-agent kept-2 && agentfs fs rm -rf my-agent /build && agentfs undelete -m 'the cleanup went too far' my-agent /build",
    ],
  },
  blame: {
    examples: [
      'agentfs blame my-agent /src/main.ts',
      'agentfs blame my-agent /src/main.ts --json',
      'agentfs blame my-agent /src/main.ts --max-versions 50',
    ],
  },
  versions: {
    examples: [
      'agentfs versions my-agent on   # every later write keeps the past content: blame, history, restore',
      'agentfs versions my-agent on --max-count 100 --max-days 90',
      'agentfs versions my-agent',
    ],
  },
  snapshot: {
    examples: [
      'agentfs snapshot my-agent',
      "agentfs snapshot my-agent before-refactor --reason 'about to rewrite /src'",
    ],
  },
  snapshots: {
    examples: [
      'agentfs snapshots my-agent',
      'agentfs snapshot my-agent old && agentfs snapshots my-agent --delete old',
    ],
  },
  restore: {
    examples: [
      'agentfs snapshot my-agent good && agentfs fs rm -r my-agent /notes && agentfs restore my-agent good',
    ],
  },
  branch: {
    examples: [
      'agentfs snapshot my-agent v1 && agentfs branch my-agent v1 experiment.db',
      "agentfs snapshot my-agent v2 && agentfs branch my-agent v2 try.db && agentfs fs write try.db /a.txt 'b' && agentfs diff try.db && agentfs commit try.db",
    ],
  },
  undo: {
    examples: [
      'agentfs commit session.db && agentfs undo session.db   # host files as before, changes back in the session',
    ],
  },
  commit: {
    examples: [
      'agentfs commit session.db',
      'agentfs diff session.db && agentfs commit session.db   # review first',
      'agentfs commit --merge session.db   # a file both the session and the host changed: merged line by line',
      "agentfs snapshot my-agent v3 && agentfs branch my-agent v3 b.db && agentfs fs write b.db /a.txt 'from the branch' && agentfs commit --merge b.db",
    ],
  },
  resolve: {
    examples: [
      "agentfs fs write session.db /README.md '# Project (both sides)' && agentfs resolve session.db /README.md && agentfs commit --merge session.db",
    ],
  },
  discard: { examples: ['agentfs discard session.db'] },
  runs: { examples: ['agentfs runs', 'agentfs runs --all --json'] },
  'sync push': { examples: ['agentfs sync push agent-a'] },
  'sync pull': {
    examples: ['agentfs sync pull agent-b   # prints each conflict it resolved'],
  },
  'sync status': {
    examples: ['agentfs sync status agent-a', 'agentfs sync status --json agent-a'],
  },
  'sync conflicts': { examples: ['agentfs sync conflicts agent-a'] },
  ui: {
    examples: [
      'agentfs ui my-agent   # prints the address to open (with its token); Ctrl-C stops',
      'agentfs ui --allow-writes my-agent   # the inspector may take snapshots',
    ],
  },
  'serve mcp': {
    examples: [
      'agentfs serve mcp my-agent',
      'agentfs serve mcp --read-only my-agent   # only the tools that change nothing',
      'agentfs serve mcp --bash my-agent   # plus bash: pipes, grep, sed, find on the same files',
    ],
  },
}

const pathOf = (command: Command): string => {
  const names: string[] = []
  for (let c: Command | null = command; c?.parent; c = c.parent) names.unshift(c.name())
  return names.join(' ')
}

/** Adds descriptions and examples to every registered command (recursively). */
export function addHelp(program: Command): void {
  const visit = (command: Command) => {
    const help = HELP[pathOf(command)]
    if (help) {
      if (help.description && !command.description()) command.description(help.description)
      command.addHelpText(
        'after',
        `\nExamples:\n${help.examples.map((e) => `  $ ${e}`).join('\n')}`,
      )
    }
    for (const sub of command.commands) visit(sub)
  }
  for (const command of program.commands) visit(command)
  program.addHelpText(
    'after',
    `
Databases are given as an id (my-agent means .agentfs/my-agent.db, else the agentfs run
session of that name) or a path.
Run "agentfs <command> --help" for a command's options and examples.

Examples:
  $ agentfs init my-agent && agentfs fs write my-agent /notes.md '# Notes'
  $ agentfs timeline my-agent --errors
  $ mkdir /tmp/agent && agentfs mount my-agent /tmp/agent
  $ agentfs run --db build -- sh -c 'make && make test' && agentfs diff build

An encrypted database opens with its key on every command: --key-file FILE, or
$AGENTFS_KEY (the key) or $AGENTFS_KEY_FILE; --cipher or $AGENTFS_CIPHER names its cipher.`,
  )
}
