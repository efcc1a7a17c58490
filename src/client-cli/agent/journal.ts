/**
 * What an agent keeps in its work directory so that a restart (kill -9, a reboot of the agent only)
 * goes on with its jobs instead of losing them: its own id, under which the service knows it holds them,
 * and a record per running job with what the local executor needs to adopt that run.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync, renameSync } from 'node:fs';
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { JobToRun } from '../../payload/executor.ts';

export interface JournalEntry {
  job: JobToRun;
  /** The local executor's reference to the run (host, pid, start time, working directory). */
  ref: string;
}

export class AgentJournal {
  readonly #dir: string;

  constructor(workDir: string) {
    this.#dir = join(workDir, '.held');
    mkdirSync(this.#dir, { recursive: true, mode: 0o700 });
  }

  /** The agent id stored in the work directory, made once: the same agent after a restart. */
  static agentId(workDir: string): string {
    const file = join(workDir, '.agent-id');
    try {
      const id = readFileSync(file, 'utf8').trim();
      if (/^[A-Za-z0-9_.-]{1,64}$/.test(id)) return id;
    } catch {
      // first start in this work directory
    }
    mkdirSync(workDir, { recursive: true, mode: 0o700 });
    const id = `${hostname().replace(/[^A-Za-z0-9_.-]/g, '-').slice(0, 20)}-${randomUUID().slice(0, 8)}`;
    writeFileSync(file, `${id}\n`, { mode: 0o600 });
    return id;
  }

  remember(entry: JournalEntry): void {
    const file = join(this.#dir, `${entry.job.jobId}.json`);
    // Written whole, then renamed: a crash never leaves half a record.
    writeFileSync(`${file}.tmp`, JSON.stringify(entry), { mode: 0o600 });
    renameSync(`${file}.tmp`, file);
  }

  forget(jobId: number): void {
    rmSync(join(this.#dir, `${jobId}.json`), { force: true });
  }

  entries(): JournalEntry[] {
    const out: JournalEntry[] = [];
    for (const name of readdirSync(this.#dir)) {
      if (!/^\d+\.json$/.test(name)) continue;
      try {
        out.push(JSON.parse(readFileSync(join(this.#dir, name), 'utf8')) as JournalEntry);
      } catch {
        rmSync(join(this.#dir, name), { force: true });
      }
    }
    return out;
  }
}
