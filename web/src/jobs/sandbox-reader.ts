/**
 * Reads a sandbox as the service sends it (a gzip-compressed tar archive, POSIX ustar with pax headers
 * for long names, as tar-stream writes it) in the browser, to show a finished job's output files
 * without a download. Only regular files are kept; names are shown, never used as paths.
 */
export interface SandboxFile {
  name: string;
  size: number;
  data: Uint8Array;
}

const BLOCK = 512;

function text(bytes: Uint8Array, from: number, length: number): string {
  const field = bytes.subarray(from, from + length);
  const end = field.indexOf(0);
  return new TextDecoder().decode(end === -1 ? field : field.subarray(0, end));
}

/** A pax extended header's `path` record (`<length> path=<value>\n`), if it has one. */
function paxPath(data: Uint8Array): string | undefined {
  for (const record of new TextDecoder().decode(data).split('\n')) {
    const match = /^\d+ path=(.*)$/s.exec(record);
    if (match) return match[1];
  }
  return undefined;
}

/** The files of an uncompressed tar archive. @throws Error on a truncated or malformed archive. */
export function readTar(archive: Uint8Array): SandboxFile[] {
  const files: SandboxFile[] = [];
  let longName: string | undefined;
  for (let at = 0; at + BLOCK <= archive.length; ) {
    const header = archive.subarray(at, at + BLOCK);
    // Two zero blocks end the archive; one is enough to stop reading.
    if (header.every((b) => b === 0)) break;
    const size = parseInt(text(header, 124, 12).trim() || '0', 8);
    if (!Number.isSafeInteger(size) || size < 0) throw new Error('the archive has an entry of unreadable size');
    const start = at + BLOCK;
    if (start + size > archive.length) throw new Error('the archive is cut short');
    const data = archive.subarray(start, start + size);
    const type = String.fromCharCode(header[156]!);
    const prefix = text(header, 345, 155);
    const name = longName ?? (prefix ? `${prefix}/${text(header, 0, 100)}` : text(header, 0, 100));
    if (type === 'x') longName = paxPath(data);
    else if (type === 'L') longName = text(data, 0, data.length);
    else {
      longName = undefined;
      if (type === '0' || type === '\0') files.push({ name, size, data });
    }
    at = start + Math.ceil(size / BLOCK) * BLOCK;
  }
  return files;
}

/** The files of a sandbox answer (gzip-compressed tar). */
export async function readSandbox(res: Response): Promise<SandboxFile[]> {
  if (!res.body) return [];
  const plain = await new Response(res.body.pipeThrough(new DecompressionStream('gzip'))).arrayBuffer();
  return readTar(new Uint8Array(plain));
}
