/**
 * ECDSA signatures from DER (what OpenSSL gives) to JOSE's fixed-width r||s (RFC 7518 §3.4).
 *
 * node:crypto converts when asked (`{ key, dsaEncoding: 'ieee-p1363' }`), but handing it a key in an
 * options object costs as much again as the signature itself (measured on Node 24: 51 µs against 24 µs
 * for a P-256 signature with the bare KeyObject), and every access token is signed. So tokens are signed
 * with the bare key and converted here.
 */

/**
 * The r||s form of a DER ECDSA-Sig-Value (SEQUENCE of two INTEGERs), each integer left-padded or stripped
 * of its sign byte to `size` bytes (32 for P-256).
 * @throws Error when the bytes are not such a signature (they always are from node:crypto).
 */
export function derToJose(der: Buffer, size: number): Buffer {
  let at = 0;
  const byte = () => {
    if (at >= der.length) throw new Error('ECDSA signature: DER ends early');
    return der[at++]!;
  };
  if (byte() !== 0x30) throw new Error('ECDSA signature: not a DER SEQUENCE');
  let length = byte();
  // A long-form length (P-521's signatures exceed 127 bytes) has one length byte here.
  if (length === 0x81) length = byte();
  if (length !== der.length - at) throw new Error('ECDSA signature: DER length does not match');
  const out = Buffer.alloc(2 * size);
  for (const offset of [0, size]) {
    if (byte() !== 0x02) throw new Error('ECDSA signature: not a DER INTEGER');
    let n = byte();
    // Leading zero bytes (the sign byte of a high first bit) carry no value.
    while (n > size && der[at] === 0) {
      at++;
      n--;
    }
    if (n > size || at + n > der.length) throw new Error('ECDSA signature: an integer does not fit');
    der.copy(out, offset + size - n, at, at + n);
    at += n;
  }
  if (at !== der.length) throw new Error('ECDSA signature: bytes after the integers');
  return out;
}
