/**
 * The sandbox store's settings in config.yaml (`jobs.sandbox`): today's files stay valid with the file store
 * by default; the S3 store's section is checked key by key, its secret never shown.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../../src/app/config.ts';
import { S3SandboxStore } from '../../src/jobs/s3-sandbox-store.ts';
import { FileSandboxStore } from '../../src/jobs/sandbox-store.ts';
import { sandboxStore } from '../../src/jobs/sandboxes.ts';

function load(yaml: string) {
  const dir = mkdtempSync(join(tmpdir(), 'dirigo-config-'));
  const file = join(dir, 'config.yaml');
  writeFileSync(file, yaml);
  return loadConfig({ dataDir: dir, file, env: {} });
}

/** What sandboxStore needs of a context, without a database (presigning is not asked for here). */
function contextOf(config: ReturnType<typeof load>) {
  const closers: (() => unknown)[] = [];
  return { config, db: undefined as never, publicUrl: 'https://dirigo.example.org', onClose: (fn: () => unknown) => void closers.push(fn), close: () => closers.forEach((fn) => fn()) };
}

const S3 = `jobs:
  sandbox:
    store: s3
    s3:
      bucket: dirigo-sandboxes
      endpoint: https://s3.example.org
      region: eu-central-1
      forcePathStyle: true
      prefix: sandboxes/
      accessKeyId: AKIDEXAMPLE
      secretAccessKey: wJalrXUtnFEMI-not-a-real-secret
    presignTtlSeconds: 600
    quotaBytes: 1073741824
`;

describe('jobs.sandbox configuration', () => {
  it('keeps the file store, and sets defaults, when the file says nothing', () => {
    const sandbox = load('{}').jobs.sandbox;
    assert.equal(sandbox.store, 'file');
    assert.equal(sandbox.dir, 'sandboxes');
    assert.equal(sandbox.presignTtlSeconds, 900);
    assert.equal(sandbox.stagePresignTtlSeconds, 86_400);
    assert.equal(sandbox.quotaBytes, 0);
    assert.equal(sandbox.unreferencedRetentionMs, 86_400_000);
    assert.deepEqual(sandbox.s3, { region: 'us-east-1', forcePathStyle: false, prefix: '' });
    const ctx = contextOf(load('{}'));
    assert.ok(sandboxStore(ctx) instanceof FileSandboxStore);
  });

  it('takes the S3 store and its settings', () => {
    const config = load(S3);
    assert.equal(config.jobs.sandbox.store, 's3');
    assert.equal(config.jobs.sandbox.s3.bucket, 'dirigo-sandboxes');
    assert.equal(config.jobs.sandbox.s3.forcePathStyle, true);
    const ctx = contextOf(config);
    const store = sandboxStore(ctx);
    assert.ok(store instanceof S3SandboxStore);
    assert.equal(store.kind, 's3');
    assert.equal(store.tmpDir, join(config.dataDir, 'sandboxes', 'tmp'));
    // Nothing of the store shows its secret when logged or printed.
    assert.ok(!JSON.stringify(store).includes('not-a-real-secret'));
    assert.ok(!String(Object.entries(store)).includes('not-a-real-secret'));
    ctx.close();
  });

  it('refuses bad values, naming the key', () => {
    const cases: [string, RegExp][] = [
      ['jobs: { sandbox: { store: gcs } }', /jobs\.sandbox\.store/],
      ['jobs: { sandbox: { presignTtlSeconds: 0 } }', /jobs\.sandbox\.presignTtlSeconds/],
      ['jobs: { sandbox: { presignTtlSeconds: 604801 } }', /jobs\.sandbox\.presignTtlSeconds/],
      ['jobs: { sandbox: { quotaBytes: -1 } }', /jobs\.sandbox\.quotaBytes/],
      ['jobs: { sandbox: { s3: { endpoint: s3.example.org } } }', /jobs\.sandbox\.s3\.endpoint/],
      ['jobs: { sandbox: { s3: { bucket: Not_A_Bucket } } }', /jobs\.sandbox\.s3\.bucket/],
      ['jobs: { sandbox: { s3: { secretAccessKey: "" } } }', /jobs\.sandbox\.s3\.secretAccessKey/],
      ['jobs: { sandbox: { s3: { bukket: x } } }', /unknown key 'jobs\.sandbox\.s3\.bukket'/],
    ];
    for (const [yaml, message] of cases) {
      assert.throws(() => load(yaml), (e: Error) => e instanceof ConfigError && message.test(e.message) && !e.message.includes('not-a-real-secret'), yaml);
    }
  });

  it('needs a bucket for the S3 store, and both keys or neither, when the file is read', () => {
    assert.throws(() => load('jobs: { sandbox: { store: s3 } }'), (e: Error) => e instanceof ConfigError && /config\.yaml: jobs\.sandbox\.s3\.bucket: required/.test(e.message));
    assert.throws(
      () => load('jobs: { sandbox: { store: s3, s3: { bucket: b-1, accessKeyId: AKIDEXAMPLE } } }'),
      (e: Error) => e instanceof ConfigError && /accessKeyId and secretAccessKey go together/.test(e.message),
    );
    // A bucket without store: s3 is kept for later (the file store stays).
    assert.equal(load('jobs: { sandbox: { s3: { bucket: b-1 } } }').jobs.sandbox.store, 'file');
  });
});
