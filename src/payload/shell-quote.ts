/** `value` as one POSIX shell word that nothing expands (single quotes; a quote inside becomes '\''). */
export function shellQuote(value: string): string {
  if (value.includes('\0')) throw new Error('a NUL byte cannot be passed to a job');
  return `'${value.replaceAll("'", `'\\''`)}'`;
}
