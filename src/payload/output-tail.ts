/** The end of a file a payload is writing (GET /jobs/{jid}/peek): read without following links of any kind. */
import { openConfined } from './confined-files.ts';

/** A file of a job's working directory: `rel` below a site's own folder `root`, whose components are never followed. */
export interface OutputLocation {
  root: string;
  rel: string;
}

/**
 * The last `maxBytes` of the file and its size; undefined when there is no such file (yet); `refused` when
 * what is there is not a regular file of its own (a FIFO, a link, a hard link to a file of the service).
 */
export async function readTail(where: OutputLocation, maxBytes: number): Promise<{ tail: Buffer; size: number } | { refused: string } | undefined> {
  const opened = await openConfined(where.root, where.rel);
  if ('absent' in opened) return undefined;
  if ('refused' in opened) return opened;
  const { handle, stat } = opened.file;
  try {
    const { size } = stat;
    const length = Math.min(size, maxBytes);
    const tail = Buffer.alloc(length);
    const { bytesRead } = await handle.read(tail, 0, length, size - length);
    return { tail: tail.subarray(0, bytesRead), size };
  } finally {
    await handle.close();
  }
}
