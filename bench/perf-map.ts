// `perf` names for JavaScript frames: turns the JIT dumps JavaScriptCore writes into the map file `perf report`
// reads (/tmp/perf-<pid>.map), so a profile of the server shows `invoke`, `flush`, `authenticate`… instead of
// bare addresses. `perf inject --jit` cannot read these dumps: it expects jit-<pid>.dump, and JavaScriptCore
// puts another number before the pid (jit-<n>-<pid>.dump). Bun's own frames stay unnamed (its binary
// carries no symbols).
//
//   BUN_JSC_useJITDump=1 BUN_JSC_jitDumpDirectory=/tmp/jd perf record -k 1 -g -o perf.data bun src/cli/main.ts start …
//   bun bench/perf-map.ts /tmp/jd/jit-*.dump
//   perf report -i perf.data --no-children --sort comm,dso,sym
//
// The format: https://github.com/torvalds/linux/blob/master/tools/perf/Documentation/jitdump-specification.txt
import { readFileSync, writeFileSync } from "node:fs";

const JIT_CODE_LOAD = 0;

/** "<start> <size> <name>" lines for every code load in one dump, and the process it came from. */
function mapOf(dump: Buffer): { pid: number; lines: string[] } {
  const view = new DataView(dump.buffer, dump.byteOffset, dump.byteLength);
  const headerSize = view.getUint32(8, true);
  const pid = view.getUint32(20, true);
  const lines: string[] = [];
  for (let at = headerSize; at + 16 <= dump.length; ) {
    const id = view.getUint32(at, true);
    const size = view.getUint32(at + 4, true);
    // A record cut short (the process was killed while writing it) ends what can be read.
    if (size === 0 || at + size > dump.length) break;
    if (id === JIT_CODE_LOAD) {
      // After the record's header (id, size, timestamp): pid, tid, vma, code_addr, code_size, code_index, name.
      const body = at + 16;
      const start = view.getBigUint64(body + 16, true);
      const codeSize = view.getBigUint64(body + 24, true);
      const nameEnd = dump.indexOf(0, body + 40);
      const name = dump.toString("utf8", body + 40, nameEnd).replace(/\s+/g, "_");
      lines.push(`${start.toString(16)} ${codeSize.toString(16)} ${name}`);
    }
    at += size;
  }
  return { pid, lines };
}

const dumps = process.argv.slice(2);
if (dumps.length === 0) {
  console.error("usage: bun bench/perf-map.ts <jit-*.dump>…");
  process.exit(2);
}
for (const path of dumps) {
  const { pid, lines } = mapOf(readFileSync(path));
  const target = `/tmp/perf-${pid}.map`;
  writeFileSync(target, `${lines.join("\n")}\n`);
  console.log(`${target}: ${lines.length} functions`);
}
