/**
 * Access tokens' ES256 signatures are made as DER by node:crypto and converted to JOSE's r||s
 * (src/auth/ecdsa-signature.ts): every conversion verifies as the P1363 form node:crypto itself reads,
 * whatever the integers' widths (a short r or s, a sign byte), and bytes that are no signature are refused.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync, sign, verify } from 'node:crypto';
import fc from 'fast-check';
import { derToJose } from '../../src/auth/ecdsa-signature.ts';

const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });

/** A DER ECDSA-Sig-Value of two integers given as unsigned big-endian bytes. */
function der(r: Buffer, s: Buffer): Buffer {
  const integer = (x: Buffer) => {
    let v = x.subarray(x.findIndex((b) => b !== 0) === -1 ? x.length - 1 : x.findIndex((b) => b !== 0));
    if (v[0]! & 0x80) v = Buffer.concat([Buffer.from([0]), v]);
    return Buffer.concat([Buffer.from([0x02, v.length]), v]);
  };
  const body = Buffer.concat([integer(r), integer(s)]);
  return Buffer.concat([Buffer.from([0x30, body.length]), body]);
}

describe('ECDSA signatures from DER to r||s', () => {
  it('verifies as node:crypto reads P1363, for any message', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 2000 }), (bytes) => {
        const data = Buffer.from(bytes);
        const jose = derToJose(sign('sha256', data, privateKey), 32);
        assert.equal(jose.length, 64);
        assert.ok(verify('sha256', data, { key: publicKey, dsaEncoding: 'ieee-p1363' }, jose));
      }),
      { numRuns: 300 },
    );
  });

  it('pads short integers and drops sign bytes to 32 bytes each', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 32, maxLength: 32 }), fc.uint8Array({ minLength: 32, maxLength: 32 }), (r, s) => {
        const expected = Buffer.concat([Buffer.from(r), Buffer.from(s)]);
        assert.deepEqual(derToJose(der(Buffer.from(r), Buffer.from(s)), 32), expected);
      }),
    );
  });

  it('refuses bytes that are not a DER signature of that size', () => {
    const good = derToJose(sign('sha256', Buffer.from('x'), privateKey), 32);
    const valid = der(good.subarray(0, 32), good.subarray(32));
    for (const bad of [Buffer.alloc(0), Buffer.from([0x31, 0]), valid.subarray(0, valid.length - 1), Buffer.concat([valid, Buffer.from([0])]), der(Buffer.alloc(33, 0xff), Buffer.alloc(32, 1))]) {
      assert.throws(() => derToJose(bad, 32), /ECDSA signature/);
    }
  });
});
