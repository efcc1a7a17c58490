/**
 * A minimal DER reader (ITU-T X.690) for the parts of X.509 that Node's X509Certificate does not expose:
 * extension criticality, basic constraints, key usage bits, RFC 3820 ProxyCertInfo and raw name RDNs.
 */

export interface DerNode {
  /** Full identifier octet (class, constructed bit and tag number < 31). */
  tag: number;
  /** The encoded element, header included. */
  raw: Buffer;
  /** The content octets. */
  content: Buffer;
}

/** The input is not the DER this reader expects: the only error the reader and certificate parser throw. */
export class DerError extends Error {}

export const TAG = {
  BOOLEAN: 0x01,
  INTEGER: 0x02,
  BIT_STRING: 0x03,
  OCTET_STRING: 0x04,
  OID: 0x06,
  SEQUENCE: 0x30,
  SET: 0x31,
} as const;

/** Reads one element at `offset`. */
export function readNode(buf: Buffer, offset = 0): DerNode & { end: number } {
  if (offset + 2 > buf.length) throw new DerError('truncated DER element');
  const tag = buf[offset]!;
  if ((tag & 0x1f) === 0x1f) throw new DerError('high tag numbers are not used in X.509');
  let len = buf[offset + 1]!;
  let pos = offset + 2;
  if (len & 0x80) {
    const n = len & 0x7f;
    if (n === 0 || n > 4) throw new DerError('unsupported DER length');
    if (pos + n > buf.length) throw new DerError('truncated DER length');
    len = 0;
    for (let i = 0; i < n; i++) len = len * 256 + buf[pos + i]!;
    pos += n;
  }
  const end = pos + len;
  if (end > buf.length) throw new DerError('DER length beyond the buffer');
  return { tag, raw: buf.subarray(offset, end), content: buf.subarray(pos, end), end };
}

/** `list[index]`, or a DerError naming what was expected there. */
export function item<T>(list: readonly T[], index: number, what: string): T {
  const value = list[index];
  if (value === undefined) throw new DerError(`missing ${what}`);
  return value;
}

/** The elements inside a constructed element. */
export function children(node: DerNode): DerNode[] {
  const out: DerNode[] = [];
  let pos = 0;
  while (pos < node.content.length) {
    const child = readNode(node.content, pos);
    out.push(child);
    pos = child.end;
  }
  return out;
}

export function decodeOid(node: DerNode): string {
  if (node.tag !== TAG.OID) throw new DerError('expected an OBJECT IDENTIFIER');
  const bytes = node.content;
  const parts: number[] = [];
  let value = 0;
  for (const b of bytes) {
    value = value * 128 + (b & 0x7f);
    if (!(b & 0x80)) {
      if (parts.length === 0) parts.push(value < 80 ? Math.floor(value / 40) : 2, value < 80 ? value % 40 : value - 80);
      else parts.push(value);
      value = 0;
    }
  }
  return parts.join('.');
}

export function decodeInteger(node: DerNode): number {
  if (node.tag !== TAG.INTEGER) throw new DerError('expected an INTEGER');
  let v = 0;
  for (const b of node.content) v = v * 256 + b;
  return v;
}

export function decodeString(node: DerNode): string {
  // BMPString is UTF-16BE; UTF8String, PrintableString, IA5String and T61String read as UTF-8/Latin text.
  if (node.tag === 0x1e) {
    const swapped = Buffer.from(node.content);
    swapped.swap16();
    return swapped.toString('utf16le');
  }
  return node.content.toString('utf8');
}
