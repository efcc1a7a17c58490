/**
 * `Arguments` to argv: words split by the POSIX shell's quoting rules (XCU §2.2: backslash, single and
 * double quotes) with no expansion of any kind, since jobs never run through a shell.
 */

export class ArgumentsError extends Error {}

/**
 * Splits a command-line string into words.
 * @throws ArgumentsError on an unterminated quote or a trailing backslash.
 * @example splitArguments(`-n 3 'a b' "c \\"d\\"" e\\ f $HOME`) // ['-n', '3', 'a b', 'c "d"', 'e f', '$HOME']
 */
export function splitArguments(text: string): string[] {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === ' ' || c === '\t' || c === '\n') {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
      i++;
    } else if (c === '\\') {
      // §2.2.1: escapes the next character; backslash-newline is a line continuation.
      if (i + 1 >= text.length) throw new ArgumentsError('ends with a lone backslash');
      if (text[i + 1] !== '\n') {
        word += text[i + 1];
        inWord = true;
      }
      i += 2;
    } else if (c === "'") {
      // §2.2.2: everything literal up to the next single quote.
      const end = text.indexOf("'", i + 1);
      if (end === -1) throw new ArgumentsError(`unterminated single quote at position ${i}`);
      word += text.slice(i + 1, end);
      inWord = true;
      i = end + 1;
    } else if (c === '"') {
      // §2.2.3: backslash keeps its meaning only before $ ` " \ and newline.
      let j = i + 1;
      for (;;) {
        if (j >= text.length) throw new ArgumentsError(`unterminated double quote at position ${i}`);
        const d = text[j]!;
        if (d === '"') break;
        if (d === '\\' && j + 1 < text.length && '$`"\\\n'.includes(text[j + 1]!)) {
          if (text[j + 1] !== '\n') word += text[j + 1];
          j += 2;
        } else {
          word += d;
          j++;
        }
      }
      inWord = true;
      i = j + 1;
    } else {
      word += c;
      inWord = true;
      i++;
    }
  }
  if (inWord) words.push(word);
  return words;
}
