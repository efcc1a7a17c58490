/**
 * Variables that steer the dynamic loader or libc of whatever process receives them: `LD_PRELOAD` makes
 * it run code from a file the variable names, `GCONV_PATH` makes iconv load one, the others make it read
 * files or change how it allocates. A payload may set them for itself, but the processes that start it
 * outside its sandbox (bwrap, the python3 measuring wrapper) must not get them from the job: its code
 * would run there, unsandboxed, as the service's (or the agent's) user.
 *
 * The names: glibc's "unsecure envvars" (sysdeps/generic/unsecvars.h, what the loader drops for setuid
 * programs), every `LD_` and `MALLOC_` name (the loader's own and glibc's tunable aliases, whatever the
 * glibc version), and the variable that carries them through the measuring wrapper (run-measure.ts).
 */

/** Set by the executor for the measuring wrapper only; a job's own variable of that name is carried like a loader variable. */
export const PASSED_ENV = 'DIRIGO_PAYLOAD_LOADER_ENV';

const UNSECURE = new Set([
  'GCONV_PATH',
  'GETCONF_DIR',
  'GLIBC_TUNABLES',
  'HOSTALIASES',
  'LOCALDOMAIN',
  'LOCPATH',
  'NIS_PATH',
  'NLSPATH',
  'RESOLV_HOST_CONF',
  'RES_OPTIONS',
  'TMPDIR',
  'TZDIR',
  PASSED_ENV,
]);

export function isLoaderVariable(name: string): boolean {
  return name.startsWith('LD_') || name.startsWith('MALLOC_') || UNSECURE.has(name);
}

/** `env` split: what the processes outside the sandbox may get, and the loader variables only the payload's side gets. */
export function splitLoaderVariables(env: Readonly<Record<string, string>>): { outside: Record<string, string>; loader: Record<string, string> } {
  const outside: Record<string, string> = {};
  const loader: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) (isLoaderVariable(name) ? loader : outside)[name] = value;
  return { outside, loader };
}
