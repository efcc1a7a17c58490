/** The end of a file a payload is writing (GET /jobs/{jid}/peek): read without following links. */
import { constants, open } from 'node:fs/promises';

/** The last `maxBytes` of `path` and its size; undefined when there is no such file (yet). */
export async function readTail(path: string, maxBytes: number): Promise<{ tail: Buffer; size: number } | undefined> {
  let handle;
  try {
    // O_NOFOLLOW: a payload may replace its StdOutput with a link to a file of the service.
    // O_NONBLOCK: a FIFO in its place must not hold the request.
    handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) return undefined;
    const { size } = stat;
    const length = Math.min(size, maxBytes);
    const tail = Buffer.alloc(length);
    const { bytesRead } = await handle.read(tail, 0, length, size - length);
    return { tail: tail.subarray(0, bytesRead), size };
  } finally {
    await handle.close();
  }
}
