/**
 * What `dirigo jobs submit` and `dirigo workflow submit` read before they send: manifest files (JSON or
 * JDL) and the files of the input sandbox, including those a JDL's InputSandbox names beside it.
 */
import { existsSync, openAsBlob, readFileSync } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { CliError, EXIT } from '../../terminal/output.ts';
import { fileNameProblem } from '../../protocol/file-names.ts';
import { JdlSyntaxError, parseJdl, renderJdl } from '../../protocol/jdl.ts';

/** A JDL file's name ends in .jdl; anything else is read as JSON. */
export const isJdlFile = (file: string): boolean => /\.jdl$/i.test(file);

export function readManifestText(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new CliError(`cannot read the manifest ${file}: ${(err as Error).message}`, EXIT.usage);
  }
}

export function parseJsonManifest(file: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new CliError(`cannot read the manifest ${file}: ${(err as Error).message} (a JDL file's name ends in .jdl)`, EXIT.usage);
  }
}

/** A JDL file's manifest, as the service reads it (a syntax error is a usage error). */
export function parsedJdl(file: string, text: string): Record<string, unknown> {
  try {
    return parseJdl(text, file);
  } catch (err) {
    if (err instanceof JdlSyntaxError) throw new CliError(err.message, EXIT.usage);
    throw err;
  }
}

/**
 * The files a JDL's InputSandbox names that exist beside it: dirac-wms-job-submit uploads them the same
 * way (entries such as `LFN:/vo/file` name catalogue files, not local ones).
 */
export function jdlInputFiles(jdlFile: string, text: string): string[] {
  const parsed = parsedJdl(jdlFile, text);
  const names = Array.isArray(parsed.InputSandbox) ? (parsed.InputSandbox as string[]) : [];
  return names.map((n) => resolve(dirname(jdlFile), n)).filter((path) => !/^[A-Za-z]+:/.test(basename(path)) && existsSync(path));
}

/** `files` with `more` added, each file once (the same path given twice is sent once). */
export function withFiles(files: readonly string[], more: readonly string[]): string[] {
  const all = [...files];
  for (const f of more) if (!all.some((g) => resolve(g) === resolve(f))) all.push(f);
  return all;
}

/** The input sandbox as Files to send, each streamed from disk; a name the service would refuse is refused here. */
export async function sandboxFiles(files: readonly string[]): Promise<File[]> {
  const inputs: File[] = [];
  for (const f of files) {
    const name = basename(f);
    const problem = fileNameProblem(name);
    if (problem) throw new CliError(`file name '${name}' ${problem}`, EXIT.usage);
    let blob: Blob;
    try {
      blob = await openAsBlob(f);
    } catch (err) {
      throw new CliError(`cannot read ${f}: ${(err as Error).message}`, EXIT.usage);
    }
    inputs.push(new File([blob], name));
  }
  return inputs;
}

/** A manifest object (or each of an array) with `Hold: true`: `--hold` submits the jobs held. */
export function heldManifest(manifest: unknown): unknown {
  if (Array.isArray(manifest)) return manifest.map(heldManifest);
  return manifest !== null && typeof manifest === 'object' ? { ...withoutKey(manifest as Record<string, unknown>, 'Hold'), Hold: true } : manifest;
}

/** A JDL text with `Hold = true`, written back as JDL (parseJdl reads what renderJdl writes as the same manifest). */
export function heldJdl(file: string, text: string): string {
  return renderJdl({ ...withoutKey(parsedJdl(file, text), 'Hold'), Hold: true });
}

/** JDL names are case-insensitive: `hold = false` and `Hold = true` would be one attribute given twice. */
function withoutKey(record: Record<string, unknown>, key: string): Record<string, unknown> {
  return Object.fromEntries(Object.entries(record).filter(([k]) => k.toLowerCase() !== key.toLowerCase()));
}
