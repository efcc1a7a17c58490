/**
 * Figures of the web application in Debian's headless Chromium (playwright-core), on SQLite:
 * - the JavaScript it sends, compressed as the server sends it (goal: < 300 kB);
 * - the job monitor's first render of 1,000 jobs against 100 jobs, rounds interleaved: a virtualised
 *   table renders the same rows whatever the page size, so the ratio should stay near 1;
 * - scrolling through the 1,000 rows, one step a frame: frame times (median, 95th percentile) and the
 *   frames over 1/60 s doubled (33 ms), which a person sees as a stutter.
 * Usage: node bench/load/webapp.ts [--rounds N]
 */
import { parseArgs } from 'node:util';
import { chromiumMissing, launchChromium } from '../../test/helpers/chromium.ts';
import { buildWebApp, openApp, signInWithPassword, startWebService } from '../../test/helpers/web-kit.ts';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '5' } }, strict: false });
const rounds = Number(values.rounds);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]!;

if (chromiumMissing('bench/load/webapp.ts')) process.exit(0);
process.stdout.write('building the web application…\n');
buildWebApp();
const svc = await startWebService('sqlite');
const browser = await launchChromium();
try {
  const token = await svc.token('alice');
  const res = await svc.request('/jobs', { method: 'POST', token, json: { Executable: 'true', Sites: ['Pool'], JobName: 'bench_%n', Parameters: 1000 } });
  if (res.status !== 201) throw new Error(`seeding: ${res.status} ${res.text}`);
  const { page } = await openApp(browser, svc);
  const scripts = new Map<string, number>();
  page.on('response', async (r) => {
    if (r.url().endsWith('.js')) scripts.set(r.url(), Number((await r.allHeaders())['content-length'] ?? 0));
  });
  await signInWithPassword(page, svc);
  const javascript = [...scripts.values()].reduce((a, b) => a + b, 0);

  const render = async (size: number): Promise<number> => {
    const started = Date.now();
    await page.goto(`${svc.url}/app/?size=${size}`);
    await page.getByText(`${size} jobs on this page`).waitFor();
    return Date.now() - started;
  };
  const times: Record<number, number[]> = { 100: [], 1000: [] };
  process.stdout.write(`first render, ${rounds} interleaved rounds…\n`);
  for (let i = 0; i < rounds; i++) for (const size of i % 2 ? [1000, 100] : [100, 1000]) times[size]!.push(await render(size));

  await render(1000);
  // Frame times scrolling one step a frame, and of the same number of idle frames (the baseline: what
  // this browser on this machine gives a page that does nothing), interleaved.
  const viewport = page.getByTestId('job-table').locator('.mantine-ScrollArea-viewport');
  const frameTimes = (scroll: boolean) =>
    viewport.evaluate(
      (el, scrolling) =>
        new Promise<number[]>((resolve) => {
          const deltas: number[] = [];
          el.scrollTop = 0;
          let last = performance.now();
          // The page's own timer (this file is type-checked for Node, which has no requestAnimationFrame).
          const nextFrame = (cb: () => void) => (globalThis as unknown as { requestAnimationFrame(cb: () => void): number }).requestAnimationFrame(cb);
          const step = () => {
            const now = performance.now();
            deltas.push(now - last);
            last = now;
            if (deltas.length > 120) return resolve(deltas.slice(1));
            if (scrolling) el.scrollTop += 60;
            nextFrame(step);
          };
          nextFrame(step);
        }),
      scroll,
    );
  const frames: number[] = [];
  const idle: number[] = [];
  for (let i = 0; i < rounds; i++) {
    frames.push(...(await frameTimes(true)));
    idle.push(...(await frameTimes(false)));
  }
  const rows = await page.locator('tr[data-jid]').count();
  const r100 = median(times[100]!);
  const r1000 = median(times[1000]!);
  process.stdout.write(
    [
      `compressed JavaScript: ${(javascript / 1024).toFixed(1)} kB (goal < 300 kB)`,
      `first render of the monitor (sign-in kept, page load to rows shown): 100 jobs ${r100} ms, 1,000 jobs ${r1000} ms, ratio ${(r1000 / r100).toFixed(2)} (medians of ${rounds})`,
      `scrolling the 1,000 rows (${frames.length} frames): median ${median(frames).toFixed(1)} ms, p95 ${quantile(frames, 0.95).toFixed(1)} ms, ${frames.filter((f) => f > 33).length} over 33 ms; idle frames (baseline): median ${median(idle).toFixed(1)} ms, p95 ${quantile(idle, 0.95).toFixed(1)} ms; ratio of medians ${(median(frames) / median(idle)).toFixed(2)}; ${rows} rows in the document`,
    ].join('\n') + '\n',
  );
} finally {
  await browser.close();
  await svc.close();
}
