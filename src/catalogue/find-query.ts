/** The paging parameters of the file search (GET /filecatalogue/directory/<d>/find), read from the raw query. */
import { InvalidRequest } from '../kernel/errors.ts';
import { DEFAULT_PAGE, MAX_CURSOR, MAX_PAGE } from './store/find.ts';

/** Query parameters of the file search that are not conditions (field definitions may not use these names). */
export const FIND_PARAMETERS: ReadonlySet<string> = new Set(['maxFiles', 'cursor']);

/** @throws InvalidRequest naming the parameter. */
export function findPaging(rawQuery: string): { maxFiles: number; cursor: string | undefined } {
  const params = new URLSearchParams(rawQuery);
  const single = (name: string): string | undefined => {
    const all = params.getAll(name);
    if (all.length > 1) throw new InvalidRequest(`${name}: give it once`);
    return all[0];
  };
  const max = single('maxFiles');
  let maxFiles = DEFAULT_PAGE;
  if (max !== undefined) {
    maxFiles = Number(max);
    if (!/^\d+$/.test(max) || maxFiles < 1 || maxFiles > MAX_PAGE) throw new InvalidRequest(`maxFiles: an integer from 1 to ${MAX_PAGE}`);
  }
  const cursor = single('cursor');
  if (cursor !== undefined && (cursor.length === 0 || cursor.length > MAX_CURSOR || !/^[A-Za-z0-9_-]+$/.test(cursor))) {
    throw new InvalidRequest("cursor: not the nextCursor of this search (a previous answer's nextCursor, unchanged)");
  }
  return { maxFiles, cursor };
}
