/**
 * Whether the matcher is the real one (issue 34) or the contract's stub, which ignores requirements: tests
 * that a job goes only where its requirements are met run once the real one is in.
 */
import { readFileSync } from 'node:fs';

const source = readFileSync(new URL('../../src/jobs/matching/matcher.ts', import.meta.url), 'utf8');

/** A skip reason while the stub is in; false once the real matcher is. */
export const NEEDS_REAL_MATCHER: string | false = source.includes('CONTRACT STUB') ? 'needs the real matcher (src/jobs/matching/matcher.ts is the contract stub, which ignores requirements)' : false;
