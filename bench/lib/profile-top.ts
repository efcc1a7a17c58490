/**
 * Summarises a V8 CPU profile (`.cpuprofile`, written by `--cpu-prof`; see DIRIGO_BENCH_CPU_PROF,
 * benchNodeFlags in test/helpers/serve-process.ts) as text for the notes under bench/profiles/: the
 * functions with the most self time, and the share of samples spent under each package or source
 * folder (inclusive, each sample counted once per folder). The profile itself opens as a flame graph in Chrome DevTools (Performance,
 * "Load profile") or speedscope.
 *
 * Usage: node bench/lib/profile-top.ts FILE.cpuprofile [--top N (25)] [--skip S (0)] [--trim OUT.cpuprofile]
 *   --skip leaves out the first S seconds (the server's start: module loading, key and schema compilation).
 *   --trim writes a copy without the per-line position ticks, gzipped when OUT ends in .gz, small enough
 *   to share. Profiles are not committed (.gitignore): the notes record what they showed.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { gunzipSync, gzipSync } from 'node:zlib';
import { parseArgs } from 'node:util';

interface CallFrame { functionName: string; url: string; lineNumber: number; columnNumber: number; scriptId: string }
interface ProfileNode { id: number; callFrame: CallFrame; children?: number[]; hitCount?: number; positionTicks?: unknown }
interface CpuProfile { nodes: ProfileNode[]; startTime: number; endTime: number; samples: number[]; timeDeltas: number[] }

const { values, positionals } = parseArgs({ options: { top: { type: 'string' }, skip: { type: 'string' }, trim: { type: 'string' } }, allowPositionals: true });
const file = positionals[0];
if (!file) throw new Error('usage: node bench/lib/profile-top.ts FILE.cpuprofile [--top N] [--trim OUT]');
// Profiles kept in the repository are gzipped (a tenth of the size); `gunzip -k` one to load it in a viewer.
const raw = readFileSync(file);
const profile = JSON.parse((file.endsWith('.gz') ? gunzipSync(raw) : raw).toString('utf8')) as CpuProfile;
const top = Number(values.top ?? 25);

const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

/** Where a frame's code lives: a package, a folder of ours, node's own, or V8's pseudo-frames. */
function area(frame: CallFrame): string {
  const url = frame.url;
  if (!url) return `(${frame.functionName || 'anonymous'})`;
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1]!;
  if (url.startsWith('node:')) return url.split('/')[0]!.replace(/:.*$/, ':') + url.slice(5).split('/')[0];
  const ours = /\/(src\/[^/]+|bin|packages\/[^/]+)\//.exec(url);
  return ours ? ours[1]! : url;
}
const shortName = (f: CallFrame) => `${f.functionName || '(anonymous)'} ${f.url ? `${f.url.replace(/^.*?\/(node_modules|src|packages)\//, '$1/')}:${f.lineNumber + 1}` : ''}`.trim();

const self = new Map<string, number>();
const inclusive = new Map<string, number>();
const ours = new Map<string, number>();
let total = 0;
let idle = 0;
const skipUs = Number(values.skip ?? 0) * 1e6;
let elapsedUs = 0;
for (const [i, id] of profile.samples.entries()) {
  elapsedUs += profile.timeDeltas[i] ?? 0;
  if (elapsedUs < skipUs) continue;
  const node = byId.get(id)!;
  total++;
  if (node.callFrame.functionName === '(idle)') {
    idle++;
    continue;
  }
  const name = shortName(node.callFrame);
  self.set(name, (self.get(name) ?? 0) + 1);
  const seen = new Set<string>();
  const oursSeen = new Set<string>();
  for (let n: ProfileNode | undefined = node; n; n = byId.get(parent.get(n.id) ?? -1)) {
    seen.add(area(n.callFrame));
    if (/\/(src|packages)\//.test(n.callFrame.url) && !n.callFrame.url.includes('node_modules')) oursSeen.add(shortName(n.callFrame));
  }
  for (const a of seen) inclusive.set(a, (inclusive.get(a) ?? 0) + 1);
  for (const a of oursSeen) ours.set(a, (ours.get(a) ?? 0) + 1);
}
const busy = total - idle;
const pct = (n: number) => `${((100 * n) / busy).toFixed(1).padStart(5)} %`;
const seconds = (profile.endTime - profile.startTime) / 1e6;
process.stdout.write(`${file}: ${seconds.toFixed(1)} s, ${total} samples, ${((100 * idle) / total).toFixed(0)} % idle; shares below are of the ${busy} busy samples\n\n`);
process.stdout.write(`self time, top ${top}:\n`);
for (const [name, n] of [...self].sort((a, b) => b[1] - a[1]).slice(0, top)) process.stdout.write(`  ${pct(n)}  ${name}\n`);
process.stdout.write(`\ninclusive time by package or folder:\n`);
for (const [name, n] of [...inclusive].sort((a, b) => b[1] - a[1]).slice(0, top)) process.stdout.write(`  ${pct(n)}  ${name}\n`);
process.stdout.write(`\ninclusive time of Dirigo's own functions:\n`);
for (const [name, n] of [...ours].sort((a, b) => b[1] - a[1]).slice(0, top)) process.stdout.write(`  ${pct(n)}  ${name}\n`);

if (values.trim) {
  const nodes = profile.nodes.map(({ positionTicks: _, ...n }) => n);
  const text = JSON.stringify({ ...profile, nodes });
  writeFileSync(values.trim, values.trim.endsWith('.gz') ? gzipSync(text, { level: 9 }) : text);
  process.stdout.write(`\nwrote ${values.trim}\n`);
}
