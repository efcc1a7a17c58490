/** "did you mean …?" for a mistyped command or subcommand: the singular or plural, or a near spelling. */

/** Levenshtein distance, two rows at a time. */
function distance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = row;
  }
  return prev[b.length]!;
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
