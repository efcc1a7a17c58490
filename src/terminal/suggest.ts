/** "did you mean …?" for a mistyped command or subcommand: the singular or plural, or a near spelling. */

/** Edit distance counting a swap of two neighbours as one edit (`jbos` → `jobs`), as typing errs. */
function distance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const row = d[i]!;
      row[j] = Math.min(d[i - 1]![j]! + 1, row[j - 1]! + 1, d[i - 1]![j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) row[j] = Math.min(row[j]!, d[i - 2]![j - 2]! + 1);
    }
  }
  return d[a.length]![b.length]!;
}

/** The candidate `word` most likely meant, if one is close enough: `job` → `jobs`, `lsit` → `list`. */
export function closest(word: string, candidates: readonly string[]): string | undefined {
  const lower = word.toLowerCase();
  const plural = candidates.find((c) => c === `${lower}s` || `${c}s` === lower || c === lower);
  if (plural) return plural;
  // A third of the word may be wrong, at most two letters: further than that a guess misleads more than it helps.
  const limit = Math.min(2, Math.max(1, Math.floor(lower.length / 3)));
  let best: { name: string; d: number } | undefined;
  for (const c of candidates) {
    const d = distance(lower, c);
    if (d <= limit && (!best || d < best.d)) best = { name: c, d };
  }
  return best?.name;
}

/** `unknown jobs command 'lsit'; did you mean 'list'?` */
export function unknownWord(what: string, word: string, candidates: readonly string[]): string {
  const guess = closest(word, candidates);
  return `unknown ${what} '${word}'${guess ? `; did you mean '${guess}'?` : ''}`;
}
