import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { FileSystem } from '@agentfs/fs'
import { createOverlay, HostFileSystem } from '@agentfs/overlay'
import { AgentFS } from '@agentfs/sdk'
import { Bash, type IFileSystem, InMemoryFs } from 'just-bash'
import { afterAll, describe, expect, test } from 'vitest'
import { BashFileSystem } from '../src/index.js'

// Real scripts, run by just-bash on AgentFS and on just-bash's own in-memory filesystem: the
// output, the exit status and the tree left behind must be the same.
const SCRIPTS: Record<string, string> = {
  'pipes and redirections': `
printf 'b\\na\\nc\\na\\n' > letters
sort letters | uniq | tee sorted | wc -l
cat sorted
echo more >> sorted
cat < sorted | tail -n 2
ls missing 2> err.txt; echo "status $?"
cat err.txt
echo out 1>&2 2>/dev/null
{ echo one; echo two; } > both && cat both
`,
  'here-documents': `
cat > conf.ini <<'EOF'
[server]
port = 8080
EOF
cat conf.ini
name=world
cat <<EOF
hello $name from $PWD
EOF
cat <<-EOF > tabs.txt
	indented
	EOF
cat tabs.txt
`,
  find: `
mkdir -p src/lib docs empty
echo 'TODO: a' > src/a.ts
echo 'b' > src/lib/b.ts
echo 'TODO: c' > docs/c.md
find . -type f | sort
find . -name '*.ts' | sort
find . -type d | sort
find src -name b.ts -o -name 'a*' | sort
find . -maxdepth 1 | sort
find . -empty | sort
`,
  'grep -r': `
mkdir -p src/lib docs
printf 'TODO: a\\nfine\\nTODO: again\\n' > src/a.ts
echo 'TODO: c' > docs/c.md
echo 'nothing' > src/lib/b.ts
grep -rn TODO . | sort
grep -rl TODO src
grep -c TODO src/a.ts
grep -ri todo docs
grep -r absent .; echo "status $?"
grep -rv TODO src | sort
`,
  'sed -i': `
printf 'hello world\\nfoo\\nbar\\n' > s.txt
sed -i 's/world/there/' s.txt
cat s.txt
sed -i.bak 's/foo/baz/' s.txt
cat s.txt s.txt.bak
sed -i '/bar/d' s.txt
cat s.txt
sed -n '2p' s.txt.bak
`,
  tar: `
mkdir -p pkg/sub
echo one > pkg/a
echo two > pkg/sub/b
tar -cf pkg.tar pkg
tar -tf pkg.tar | sort
rm -r pkg
tar -xf pkg.tar
cat pkg/a pkg/sub/b
tar -czf pkg.tgz pkg
mkdir out && tar -xzf pkg.tgz -C out
find out -type f | sort
cat out/pkg/sub/b
rm pkg.tar pkg.tgz # they hold the files' times, which differ between the two runs
`,
  'cp, mv, rm, ln': `
mkdir d
echo x > d/f
cp -r d e
mv e/f e/g
ln -s g e/link
cat e/link
readlink e/link
ln e/g e/hard
cat e/hard
rm -r d
ls
ls e | sort
cp e/g copy && cat copy
mv copy e/
ls e | sort
rm e/link
ls e | sort
rm -rf nothing; echo "status $?"
`,
  'loops, functions, subshells': `
for i in 1 2 3; do echo "n$i" > "file$i"; done
cat file*
count() { ls | wc -l; }
count
( cd /nonexistent 2>/dev/null || echo "no such dir" )
mkdir sub && cd sub && pwd && echo inside > here
cd .. && cat sub/here
i=0; while [ $i -lt 3 ]; do i=$((i+1)); done; echo $i
x=$(cat file2); echo "got $x"
[ -f file1 ] && echo file1 exists
[ -d sub ] && echo sub is a dir
test -e nope || echo nope missing
`,
  'errors say what went wrong': `
cat missing
echo "status $?"
mkdir x
mkdir x
echo "status $?"
rmdir x && echo removed
rm nothing
echo "status $?"
cd missing
echo "status $?"
cat .
`,
  'text tools': `
printf 'alice 30\\nbob 25\\ncarol 35\\n' > people
awk '{ sum += $2 } END { print sum }' people
sort -k2 -n people | head -n 1
cut -d' ' -f1 people | tr a-z A-Z
wc -l < people
printf 'a,b\\n1,2\\n' > t.csv
cut -d, -f2 t.csv
printf '\\x00\\x01\\xff' > bin && wc -c bin
base64 bin
echo '{"a":[1,2]}' | jq -c '.a'
seq 1 5 | xargs echo
diff <(echo a) <(echo b); echo "status $?"
`,
}

async function dump(fs: IFileSystem, dir: string, out: string[] = []): Promise<string[]> {
  for (const name of (await fs.readdir(dir)).sort()) {
    const path = `${dir}/${name}`
    const st = await fs.lstat(path)
    if (st.isSymbolicLink) out.push(`${path} -> ${await fs.readlink(path)}`)
    else if (st.isDirectory) {
      out.push(`${path}/`)
      await dump(fs, path, out)
    } else out.push(`${path} ${Buffer.from(await fs.readFileBuffer(path)).toString('base64')}`)
  }
  return out
}

async function run(fs: IFileSystem, script: string) {
  await fs.mkdir('/work', { recursive: true })
  const bash = new Bash({ fs, cwd: '/work' })
  const result = await bash.exec(script)
  return {
    stdout: result.stdout,
    stderr: result.stderr,
    exitCode: result.exitCode,
    tree: await dump(fs, '/work'),
  }
}

const hostDirs: string[] = []
afterAll(() => {
  for (const dir of hostDirs) rmSync(dir, { recursive: true, force: true })
})

const BACKENDS: Record<string, () => Promise<{ fs: FileSystem; close(): Promise<void> }>> = {
  database: async () => {
    const agent = await AgentFS.open({ path: ':memory:' })
    return { fs: agent.fs, close: () => agent.close() }
  },
  // Copy-on-write over a host directory: the scripts' changes land in the delta database, and
  // the host stays as it was.
  overlay: async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agentfs-bash-base-'))
    hostDirs.push(dir)
    const delta = await AgentFS.open({ path: ':memory:' })
    const fs = await createOverlay({ base: new HostFileSystem({ root: dir }), delta: delta.fs })
    return {
      fs,
      close: async () => {
        expect(readdirSync(dir)).toEqual([])
        await delta.close()
      },
    }
  },
  'host directory': async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agentfs-bash-'))
    hostDirs.push(dir)
    return { fs: new HostFileSystem({ root: dir, writable: true }), close: async () => {} }
  },
}

describe.each(Object.keys(BACKENDS))(
  'scripts on AgentFS (%s) behave as on just-bash’s own filesystem',
  (backend) => {
    for (const [name, script] of Object.entries(SCRIPTS))
      test(name, async () => {
        const expected = await run(new InMemoryFs(), script)
        const target = await BACKENDS[backend]!()
        try {
          const actual = await run(new BashFileSystem({ fs: target.fs }), script)
          expect(actual).toEqual(expected)
          expect(expected.exitCode === 0 || expected.stderr !== '').toBe(true)
        } finally {
          await target.close()
        }
      })
  },
)
