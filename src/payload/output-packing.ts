/**
 * Packing a finished job's output sandbox from its working directory, shared by the local and Slurm
 * executors: StdOutput, StdError and the files its OutputSandbox patterns match, read below the site's own
 * folder without following anything the payload left there (see confined-files.ts), within a deadline
 * (jobs.sandbox.outputPackTimeoutMs) and stopped at once by a shutdown. What was refused is named.
 */
import picomatch from 'picomatch';
import { PayloadTooLarge } from '../kernel/errors.ts';
import { listConfined } from './confined-files.ts';
import { describeSkipped, packFiles, type ArchiveFile, type SkippedFile } from './sandbox-archive.ts';
import type { SandboxStore, StoredObject } from './sandbox-store.ts';
import { wrapMinorStatus } from '../protocol/job-status.ts';

/** When no deadline is configured (an agent's executor): ten minutes. */
export const DEFAULT_PACK_TIMEOUT_MS = 600_000;

export interface OutputToPack {
  /** The site's own folder (workDir, stagingDir): nothing below it is followed. */
  root: string;
  /** The job's working directory below `root`, as a relative POSIX path. */
  dir: string;
  stdout: string;
  stderr: string;
  patterns: readonly string[];
}

export interface PackLimits {
  maxSandboxSize: number;
  maxFiles: number;
  outputPackTimeoutMs?: number;
}

export interface PackedOutput {
  stored?: StoredObject;
  /** Why there is no output sandbox, in the words of the job's MinorStatus. */
  error?: string;
  /** Stopped because the server is shutting down: the job's end is not to be reported. */
  shutdown?: boolean;
  skipped: SkippedFile[];
}

class PackingTimedOut extends Error {}

/** The files to pack: StdOutput and StdError, then what the patterns match (links and FIFOs too, to be named when refused). */
async function filesOf(o: OutputToPack, maxFiles: number, signal: AbortSignal): Promise<ArchiveFile[]> {
  const at = (rel: string): ArchiveFile => ({ name: rel, path: `${o.root}/${o.dir}/${rel}`, within: o.root });
  const files = [at(o.stdout), at(o.stderr)];
  if (o.patterns.length === 0) return files;
  const match = picomatch([...o.patterns], { dot: false });
  const seen = new Set([o.stdout, o.stderr]);
  for (const rel of await listConfined(o.root, o.dir, maxFiles, signal)) {
    if (!seen.has(rel) && match(rel)) {
      seen.add(rel);
      files.push(at(rel));
    }
  }
  return files;
}

/** Packs and stores the output; never throws for what the payload did, only reports it. */
export async function packOutput(store: SandboxStore, o: OutputToPack, limits: PackLimits, shutdown: AbortSignal): Promise<PackedOutput> {
  const timeoutMs = limits.outputPackTimeoutMs ?? DEFAULT_PACK_TIMEOUT_MS;
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(new PackingTimedOut(`Output packing timed out after ${Math.round(timeoutMs / 1000)} s (jobs.sandbox.outputPackTimeoutMs)`)), timeoutMs);
  timer.unref();
  const signal = AbortSignal.any([deadline.signal, shutdown]);
  const skipped: SkippedFile[] = [];
  try {
    const files = await filesOf(o, limits.maxFiles, signal);
    signal.throwIfAborted();
    const stored = await store.put(packFiles(files, { signal, onSkip: (s) => skipped.push(s) }), { bytes: limits.maxSandboxSize, setting: 'jobs.sandbox.maxSandboxSize' });
    return { stored, skipped };
  } catch (err) {
    if (shutdown.aborted) return { shutdown: true, skipped };
    if (deadline.signal.aborted) return { error: (deadline.signal.reason as Error).message, skipped };
    const message = (err as Error).message;
    return { error: wrapMinorStatus(message, (said) => (err instanceof PayloadTooLarge ? `Output sandbox too large: ${said}` : `Output sandbox could not be stored: ${said}`)), skipped };
  } finally {
    clearTimeout(timer);
  }
}

/** `minorStatus` followed by the files the packing refused, when there were any. */
export function withSkipped(minorStatus: string, skipped: readonly SkippedFile[]): string {
  return skipped.length === 0 ? minorStatus : `${minorStatus}; ${describeSkipped(skipped)}`;
}
