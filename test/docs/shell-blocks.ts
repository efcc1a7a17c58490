/**
 * The shell blocks of a Markdown file, as the README test runs them: every ```sh (or bash, shell) block
 * in order, except one right after a `<!-- not run: REASON -->` comment. A `# => TEXT` comment, at the
 * end of a command or on a line of its own, is output the block must print: the expected lines appear in
 * the block's output in this order, each inside one line, with `...` standing for any text.
 */
import { readFileSync } from 'node:fs';

export interface ShellBlock {
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
  script: string;
  expected: string[];
  /** Why the block is not run, when it is marked so. */
  notRun?: string;
}

const FENCE = /^```\s*([\w-]*)\s*$/;
const SHELL = new Set(['sh', 'bash', 'shell', 'console']);
const NOT_RUN = /^<!--\s*not run:\s*(.+?)\s*-->$/;
const EXPECTED = /(?:^|\s)# => (.*)$/;

export function shellBlocks(file: string): ShellBlock[] {
  const lines = readFileSync(file, 'utf8').split('\n');
  const blocks: ShellBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]!);
    if (!open) continue;
    const start = i;
    let end = i + 1;
    while (end < lines.length && !/^```\s*$/.test(lines[end]!)) end++;
    i = end;
    if (!SHELL.has(open[1]!)) continue;
    const body = lines.slice(start + 1, end);
    let before = start - 1;
    while (before >= 0 && lines[before]!.trim() === '') before--;
    const notRun = before >= 0 ? NOT_RUN.exec(lines[before]!.trim())?.[1] : undefined;
    blocks.push({
      file,
      line: start + 1,
      script: body.join('\n'),
      expected: body.flatMap((l) => EXPECTED.exec(l)?.[1]?.trimEnd() ?? []),
      ...(notRun ? { notRun } : {}),
    });
  }
  return blocks;
}

/**
 * The first of `expected` that does not appear in `output` after the ones before it, or undefined when
 * all do. Each is looked for within one line (outputs without a final newline may share one).
 */
export function missingOutput(expected: readonly string[], output: string): string | undefined {
  let at = 0;
  for (const text of expected) {
    const pattern = new RegExp(text.split('...').map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('[^\\n]*?'), 'g');
    pattern.lastIndex = at;
    const found = pattern.exec(output);
    if (!found) return text;
    at = found.index + found[0].length;
  }
  return undefined;
}
