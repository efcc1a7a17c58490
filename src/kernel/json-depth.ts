/**
 * A bound on how deeply JSON may nest, checked on the text before it is parsed. JSON.parse itself copes
 * with any depth, but much of what follows does not: JSON.stringify (storing a manifest, quoting a value in
 * an error message), the schema validator and recursive walks all recurse, and thousands of levels exhaust
 * the stack (a 500). No document the service takes needs more than a handful of levels.
 */
import { InvalidRequest } from './errors.ts';

/** The deepest nesting of arrays and objects any JSON the service reads may have. */
export const MAX_JSON_DEPTH = 64;

const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * Throws InvalidRequest when `text` nests arrays and objects deeper than MAX_JSON_DEPTH. One linear pass
 * that skips strings; it does not check the syntax (the parser that follows does).
 */
export function refuseDeepJson(text: string, where: string): void {
  // Fewer brackets than the bound cannot exceed it.
  if (text.length <= MAX_JSON_DEPTH) return;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > MAX_JSON_DEPTH) throw new InvalidRequest(`${where} is JSON nested deeper than ${MAX_JSON_DEPTH} levels`);
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) depth--;
  }
}
