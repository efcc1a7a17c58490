/** The catalogue's own refusals, with codes clients (the CLI) tell apart from other conflicts. */
import { DirigoError } from '../kernel/errors.ts';

export const DIRECTORY_NOT_EMPTY = 'directory_not_empty';

/** 409: a directory removal without recursive=true found something inside. */
export class DirectoryNotEmpty extends DirigoError {
  constructor(path: string) {
    // The API's words: the CLI words its own hint (-r) from the code.
    super(DIRECTORY_NOT_EMPTY, 409, `directory ${path} is not empty (use recursive=true)`);
  }
}
