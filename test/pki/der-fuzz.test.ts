/**
 * The certificate reader is fed hostile DER: random bytes, truncations, wrong and huge
 * lengths, wrong tags, deep nesting and byte flips of real certificates. It may only ever return or throw
 * DerError, which the verifier turns into a rejection (401), never an unexpected error (500).
 * `DIRIGO_FUZZ_RUNS` and `DIRIGO_FUZZ_SEED` (printed on failure by fast-check) set the run; `npm run fuzz`
 * runs many more cases.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import fc from 'fast-check';
import { readCertificateDer } from '../../src/pki/certificate.ts';
import { DerError } from '../../src/pki/der.ts';
import { makeProxy } from '../helpers/openssl.ts';
import { testPki } from '../helpers/pki.ts';

const RUNS = Number(process.env.DIRIGO_FUZZ_RUNS ?? 400);
const SEED = process.env.DIRIGO_FUZZ_SEED === undefined ? 20261124 : Number(process.env.DIRIGO_FUZZ_SEED);

function onlyDerErrors(bytes: Uint8Array): void {
  try {
    readCertificateDer(Buffer.from(bytes));
  } catch (err) {
    if (!(err instanceof DerError)) throw new Error(`not a DerError for ${Buffer.from(bytes).toString('hex').slice(0, 200)}`, { cause: err });
  }
}

describe('the DER certificate reader under hostile input', () => {
  const samples: Buffer[] = [];
  before(async () => {
    const pki = await testPki();
    const proxy = makeProxy(pki.users.alice!);
    for (const pem of [pki.users.alice!.certPem, pki.ca.certPem, proxy.cert]) samples.push(new X509Certificate(pem).raw);
  });

  it('reads the real certificates', () => {
    for (const der of samples) assert.ok(readCertificateDer(der).subjectDn.startsWith('/'));
  });

  it('throws only DerError for random bytes', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 4096 }), onlyDerErrors), { numRuns: RUNS, seed: SEED });
  });

  it('throws only DerError for truncated, flipped and re-tagged real certificates', () => {
    const sample = fc.integer({ min: 0, max: 2 }).map((i) => samples[i]!);
    const mutation = fc.record({
      cut: fc.option(fc.nat(), { nil: undefined }),
      edits: fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 8 }),
    });
    fc.assert(
      fc.property(sample, mutation, (der, m) => {
        const bytes = Buffer.from(der);
        for (const [at, value] of m.edits) bytes[at % bytes.length] = value;
        onlyDerErrors(m.cut === undefined ? bytes : bytes.subarray(0, m.cut % bytes.length));
      }),
      { numRuns: RUNS, seed: SEED },
    );
  });

  it('throws only DerError for huge and indefinite lengths, high tags and deep nesting', () => {
    const header = fc.constantFrom(
      [0x30, 0x84, 0xff, 0xff, 0xff, 0xff],
      [0x30, 0x85, 0x01, 0x00, 0x00, 0x00, 0x00],
      [0x30, 0x80],
      [0x1f, 0x81, 0x00],
      [0x30, 0x82, 0x00],
      [0xa3, 0x03, 0x30, 0x01],
    );
    const nested = fc.integer({ min: 1, max: 20000 }).map((depth) => {
      // SEQUENCE { SEQUENCE { ... } } with definite lengths that are all wrong but the outermost.
      const out = Buffer.alloc(depth * 2);
      for (let i = 0; i < depth; i++) {
        out[2 * i] = 0x30;
        out[2 * i + 1] = Math.min(0x7f, 2 * (depth - i - 1));
      }
      return out;
    });
    fc.assert(
      fc.property(header, fc.uint8Array({ maxLength: 64 }), nested, (h, tail, deep) => {
        onlyDerErrors(Buffer.concat([Buffer.from(h), Buffer.from(tail)]));
        onlyDerErrors(deep);
        onlyDerErrors(Buffer.concat([Buffer.from([0x30, 0x82, (deep.length >> 8) & 0xff, deep.length & 0xff]), deep]));
      }),
      { numRuns: RUNS, seed: SEED },
    );
  });
});
