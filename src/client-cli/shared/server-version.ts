/**
 * Warns once, on stderr, when the service announces (Dirigo-API-Version) an API this dirigo does not speak
 * to: a CLI or single executable older or newer than the server fails in ways that are hard to read.
 */
import { API_VERSION, API_VERSION_HEADER, SPEAKS_TO, speaksTo } from '../../kernel/version.ts';

let warned = false;

/** Looks at one answer's headers; the first mismatch is said once per process. */
export function checkServerVersion(url: string, headers: Headers): void {
  const announced = headers.get(API_VERSION_HEADER);
  if (warned || announced === null || speaksTo(announced)) return;
  warned = true;
  process.stderr.write(
    `dirigo: warning: ${url} serves API ${announced}, and this dirigo (API ${API_VERSION}) speaks to servers with API ${SPEAKS_TO}: ` +
      `commands may fail. Fetch the matching dirigo from ${url}/downloads\n`,
  );
}
