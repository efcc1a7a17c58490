/**
 * Loaded before every test file (`node --import`): each test process gets a scratch folder as its TMPDIR,
 * inherited by the servers, agents and tools it starts, and removed when the process exits, so that a
 * test run leaves nothing behind in /tmp however its files create their temporaries.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';

const parent = process.env.TMPDIR || '/tmp';
const scratch = mkdtempSync(join(parent, 'dirigo-tests-'));
process.env.TMPDIR = scratch;
process.on('exit', () => rmSync(scratch, { recursive: true, force: true }));
