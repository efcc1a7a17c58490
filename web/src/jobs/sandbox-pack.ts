/**
 * The browser's packing of an input sandbox, as the service and the CLI write one: a gzip-compressed tar
 * archive (ustar, a pax header for a name over 100 bytes), gzip by CompressionStream, the sha256 by Web
 * Crypto. The archive is a Blob of the files: their bytes are read only while compressing.
 */
const BLOCK = 512;
const encoder = new TextEncoder();

function octal(value: number, length: number): string {
  return `${value.toString(8).padStart(length - 1, '0')}\0`;
}

/** One 512-byte ustar header; the checksum is computed over it with its own field as spaces. */
function header(name: string, size: number, type: '0' | 'x', mtime: number): Uint8Array<ArrayBuffer> {
  const block = new Uint8Array(BLOCK);
  const put = (text: string, at: number, length: number) => block.set(encoder.encode(text).subarray(0, length), at);
  put(name, 0, 100);
  put(octal(0o644, 8), 100, 8);
  put(octal(0, 8), 108, 8);
  put(octal(0, 8), 116, 8);
  put(octal(size, 12), 124, 12);
  put(octal(mtime, 12), 136, 12);
  put('        ', 148, 8);
  put(type, 156, 1);
  put('ustar\0', 257, 6);
  put('00', 263, 2);
  const sum = block.reduce((a, b) => a + b, 0);
  put(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 8);
  return block;
}

/** A pax record `<length> path=<name>\n`, its length counting its own digits. */
function paxRecord(name: string): Uint8Array<ArrayBuffer> {
  const body = ` path=${name}\n`;
  const bytes = encoder.encode(body).length;
  let length = bytes + String(bytes).length;
  if (String(length).length !== String(bytes).length) length++;
  return new Uint8Array(encoder.encode(`${length}${body}`));
}

function padding(size: number): Uint8Array<ArrayBuffer> {
  return new Uint8Array((BLOCK - (size % BLOCK)) % BLOCK);
}

/** The files as one uncompressed tar archive (a Blob: the files' bytes are not copied into memory). */
function tarOf(files: readonly File[]): Blob {
  const parts: (Uint8Array<ArrayBuffer> | Blob)[] = [];
  for (const file of files) {
    const mtime = Math.floor(file.lastModified / 1000);
    const nameBytes = encoder.encode(file.name).length;
    if (nameBytes > 100) {
      const record = paxRecord(file.name);
      parts.push(header('PaxHeader', record.length, 'x', mtime), record, padding(record.length));
    }
    parts.push(header(file.name, file.size, '0', mtime), file, padding(file.size));
  }
  parts.push(new Uint8Array(2 * BLOCK));
  return new Blob(parts);
}

/** The files packed as the sandbox tar.gz, with its sha256 (hex). */
export async function packSandbox(files: readonly File[]): Promise<{ archive: Blob; sha256: string }> {
  const archive = await new Response(tarOf(files).stream().pipeThrough(new CompressionStream('gzip'))).blob();
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', await archive.arrayBuffer()));
  return { archive, sha256: Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('') };
}

