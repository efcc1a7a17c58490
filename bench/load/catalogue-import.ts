/**
 * Figure: bulk import through the real `POST /filecatalogue/bulk` endpoint over HTTPS, at least
 * 50,000 files/s, on SQLite and PostgreSQL. Each file line carries 3 file-metadata values; one directory
 * line (with 2 directory fields) precedes every 100 files. Default 200,000 files; `--full` 1,000,000.
 * Usage: node bench/load/catalogue-import.ts [--full] [--files N] [--dialect sqlite|postgres|both] [--batch-size N (default: the configuration's)]
 */
import { parseArgs } from 'node:util';
import { Readable } from 'node:stream';
import { Agent, request } from 'undici';
import { postgresUnavailable } from '../../test/helpers/dialects.ts';
import { startTestService } from '../../test/helpers/service.ts';
import type { Dialect } from '../../src/kernel/db/dialect.ts';

const { values } = parseArgs({ options: { full: { type: 'boolean' }, files: { type: 'string' }, dialect: { type: 'string', default: 'both' }, 'batch-size': { type: 'string' } } });
if (!['sqlite', 'postgres', 'both'].includes(values.dialect)) throw new Error('--dialect: sqlite, postgres or both');
const FILES = Number(values.files ?? (values.full ? 1_000_000 : 200_000));
const PER_DIR = 100;

function ndjson(): Buffer[] {
  const chunks: Buffer[] = [];
  let lines: string[] = [];
  for (let i = 0; i < FILES; i++) {
    const d = Math.floor(i / PER_DIR);
    if (i % PER_DIR === 0) lines.push(JSON.stringify({ dir: `/imp/c${d % 10}/r${d}`, metadata: { Run: d, Stream: ['physics', 'calib', 'express'][d % 3] } }));
    lines.push(JSON.stringify({ file: `/imp/c${d % 10}/r${d}/f${i}.root`, size: 1_000_000 + i, checksum: (i * 2654435761 >>> 0).toString(16), metadata: { Quality: i % 7 ? 'good' : 'bad', Events: i % 10_000, Version: 1 + (i % 3) } }));
    if (lines.length >= 10_000) {
      chunks.push(Buffer.from(`${lines.join('\n')}\n`));
      lines = [];
    }
  }
  if (lines.length) chunks.push(Buffer.from(`${lines.join('\n')}\n`));
  return chunks;
}

async function run(dialect: Dialect, body: Buffer[]): Promise<void> {
  const svc = await startTestService({ dialect, logLevel: 'silent', config: { catalogue: { bulkBodyLimit: 1024 * 1024 * 1024, ...(values['batch-size'] ? { bulkBatchSize: Number(values['batch-size']) } : {}) } } });
  try {
    const admin = await svc.token('admin', 'dirigo_admin');
    for (const [Name, Type, Scope] of [
      ['Run', 'int', 'directory'],
      ['Stream', 'string', 'directory'],
      ['Quality', 'string', 'file'],
      ['Events', 'int', 'file'],
      ['Version', 'int', 'file'],
    ]) {
      const res = await svc.request('/filecatalogue/metadata', { method: 'POST', token: admin, json: { Name, Type, Scope } });
      if (res.status !== 201) throw new Error(res.text);
    }
    const agent = new Agent({ connect: { ca: svc.pki.ca.certPem }, bodyTimeout: 0, headersTimeout: 0 });
    const bytes = body.reduce((n, b) => n + b.length, 0);
    const t0 = performance.now();
    const res = await request(`${svc.url}/filecatalogue/bulk`, {
      method: 'POST',
      dispatcher: agent,
      headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/x-ndjson' },
      body: Readable.from(body),
    });
    const answer = (await res.body.json()) as { applied: number; error?: unknown };
    const seconds = (performance.now() - t0) / 1000;
    await agent.close();
    if (res.statusCode !== 200) throw new Error(`bulk: ${res.statusCode} ${JSON.stringify(answer)}`);
    const rate = FILES / seconds;
    process.stdout.write(
      `catalogue bulk import ${dialect}: ${FILES} files (+${FILES / PER_DIR} directories, ${(bytes / 1e6).toFixed(0)} MB NDJSON) in ${seconds.toFixed(1)} s = ${rate.toFixed(0)} files/s (target >= 50,000 files/s, ${rate >= 50_000 ? 'OK' : 'BELOW TARGET'}); applied ${answer.applied} lines\n`,
    );
  } finally {
    await svc.close();
  }
}

const body = ndjson();
const pgDown = await postgresUnavailable();
for (const dialect of ['sqlite', 'postgres'] as const) {
  if (values.dialect !== 'both' && values.dialect !== dialect) continue;
  if (dialect === 'postgres' && pgDown) {
    process.stdout.write(`catalogue bulk import postgres: SKIPPED (${pgDown})\n`);
    continue;
  }
  await run(dialect, body);
}
