/**
 * The sandbox local payloads run in (a local site's `isolation: bubblewrap`, the default). Local payloads
 * run under the server's own user, which can read everything the service keeps: without a sandbox a job
 * could `cat ../../pki/users/admin.key` and sign in as the administrator.
 *
 * bubblewrap (bwrap(1)) starts the payload in a mount namespace of its own where the whole file system is
 * bound read-only and every place that holds the service's secrets or other people's work — the data dir,
 * the config file, the TLS key, the database file, the sandbox store, the parent of all working
 * directories — is covered by an empty tmpfs (a file by /dev/null); only the job's own working directory
 * is bound read-write again, and the CA file the job is told of (DIRIGO_CA) and the folder of the `dirigo`
 * command (cli-on-path.ts) read-only. It also gets a
 * private /tmp, /dev and /proc (a new PID namespace: the server's /proc/<pid>/root and environ are out of
 * sight), no capabilities (a root server's payload cannot unmount what hides the secrets) and
 * no_new_privs. The network stays: the payload reports to the service over HTTPS with its job token.
 *
 * Deliberately left out: `--new-session` (the executor spawns bwrap detached, so it leads a session of its
 * own with no controlling terminal already, and one process group keeps the group kill and the CPU-time
 * measure reaching the whole tree) and `--die-with-parent` (a local run outlives a server that dies, to be
 * adopted by the restart). Killing the group kills the PID namespace's init, and with it every process in
 * the namespace, even one that left the group with setsid.
 */
import { execFile } from 'node:child_process';
import { constants as fsConstants } from 'node:fs';
import { access, realpath, stat } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AppConfig } from '../kernel/config.ts';
import { environment } from '../kernel/config.ts';

/** Namespaces and mounts every sandbox starts with; the probe runs the same. */
const BASE = ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp', '--unshare-pid', '--unshare-ipc', '--cap-drop', 'ALL'];

const FIX = 'install bubblewrap (Debian: apt-get install bubblewrap), or set isolation: none on this site knowingly (its payloads can then read every file of the server\'s user, the service\'s keys included)';

/**
 * Where the service keeps what payloads must not read, as configured: the data dir, the config file (and
 * its folder), the TLS key, the SQLite database (with its journal files), the sandbox store, every site's
 * working and staging directories, the server user's own credentials (the token cache of `dirigo login`,
 * ~/.globus, database, SSH and cloud credentials) and the sockets of local services.
 */
export function servicePaths(config: AppConfig): string[] {
  const fromData = (p: string) => resolve(config.dataDir, p);
  const paths = [config.dataDir, fromData(config.jobs.sandbox.dir), config.tls.key];
  if (config.source !== '<inline config>') paths.push(resolve(config.source));
  if (config.database.url.startsWith('sqlite:') && config.database.url !== 'sqlite::memory:') {
    const file = fromData(config.database.url.slice('sqlite:'.length));
    paths.push(file, `${file}-wal`, `${file}-shm`, `${file}-journal`);
  }
  for (const site of config.jobs.sites) {
    if (site.type === 'local') paths.push(fromData(site.workDir));
    if (site.type === 'slurm') paths.push(fromData(site.stagingDir));
  }
  paths.push(join(environment.configHome(), 'dirigo'));
  const home = environment.get('HOME');
  if (home) paths.push(...USER_CREDENTIALS.map((name) => join(home, name)));
  // The config file's folder usually holds its neighbours too (keys, an env file with the database URL),
  // unless it is the folder of the code itself (a clone's config.yaml), which payloads run from.
  if (config.source !== '<inline config>') {
    const folder = dirname(resolve(config.source));
    if (!inside(CODE_ROOT, folder)) paths.push(folder);
  }
  // Sockets of local services stay connectable through a read-only mount: they are covered as well.
  const uid = process.getuid?.();
  return [...paths, ...LOCAL_SOCKETS, ...(uid === undefined ? [] : [`/run/user/${uid}`])];
}

/** Credentials of other tools the server's user may hold in its home (database, SSH, cloud, grid). */
const USER_CREDENTIALS = ['.globus', '.pgpass', '.postgresql', '.my.cnf', '.ssh', '.netrc', '.docker', '.kube', '.aws', '.gnupg'];

/** Where local services listen (Docker, PostgreSQL, MariaDB, the system bus): peer authentication as the server's user. */
const LOCAL_SOCKETS = ['/run/docker.sock', '/var/run/docker.sock', '/run/postgresql', '/var/run/postgresql', '/run/mysqld', '/var/run/mysqld', '/run/dbus/system_bus_socket'];

/** The folder of the running code (the package root), which payloads need for `dirigo job report`. */
const CODE_ROOT = fileURLToPath(new URL('../../', import.meta.url)).replace(/\/$/, '');

function inside(path: string, dir: string): boolean {
  return path === dir || path.startsWith(dir === '/' ? '/' : dir + sep);
}

/** The real path and kind of what exists at `path`; undefined when nothing does. */
async function real(path: string): Promise<{ path: string; dir: boolean } | undefined> {
  try {
    const p = await realpath(path);
    return { path: p, dir: (await stat(p)).isDirectory() };
  } catch {
    return undefined;
  }
}

export interface PayloadSandboxOptions {
  /** Folders and files to cover, absolute (servicePaths()). */
  hide: readonly string[];
  /** The folder holding every job's working directory: covered too. */
  workRoot: string;
}

/** One site's bubblewrap sandbox: checked once at start, then a command line per payload. */
export class PayloadSandbox {
  readonly #o: PayloadSandboxOptions;
  #bwrap: string | undefined;

  constructor(options: PayloadSandboxOptions) {
    this.#o = options;
  }

  /**
   * Runs an empty sandbox once. @returns undefined when sandboxes work here, otherwise what is wrong and
   * how to fix it (bwrap missing, or the kernel refusing the namespaces it needs).
   */
  async check(): Promise<string | undefined> {
    const path = environment.get('PATH') || '/usr/local/bin:/usr/bin:/bin';
    let bwrap: string | undefined;
    for (const dir of path.split(':')) {
      if (!dir) continue;
      const candidate = join(dir, 'bwrap');
      if (await access(candidate, fsConstants.X_OK).then(() => true, () => false)) {
        bwrap = candidate;
        break;
      }
    }
    if (!bwrap) return `payloads cannot be sandboxed: bwrap is not installed (not found in PATH ${path}); ${FIX}`;
    const failure = await new Promise<string | undefined>((done) => {
      try {
        // An empty environment: the empty sandbox needs none, and the server's own (a PATH near ARG_MAX)
        // must not make the check fail, which would leave the site taking no jobs until a restart.
        execFile(bwrap, [...BASE, '--', '/bin/sh', '-c', 'exit 0'], { timeout: 30_000, env: {} }, (err, _stdout, stderr) => {
          done(err ? (stderr.trim() || err.message).split('\n')[0] : undefined);
        });
      } catch (err) {
        // Some spawn failures (E2BIG, EINVAL) are thrown rather than passed to the callback.
        done((err as Error).message);
      }
    });
    if (failure) return `payloads cannot be sandboxed: ${bwrap} cannot create its namespaces here (${failure}); ${FIX}`;
    this.#bwrap = bwrap;
    return undefined;
  }

  /**
   * The program and arguments that run `argv` in a sandbox for the job whose working directory is `dir`;
   * `show` are files and folders to keep readable although they lie in a hidden place (the CA of
   * DIRIGO_CA, the folder of the `dirigo` script).
   * Paths are resolved (symbolic links followed) at each start, and what does not exist is left out.
   * `setenv` are variables that bwrap sets for the payload only (the job's loader variables,
   * loader-environment.ts): they must not reach bwrap itself. They are on its command line, which any
   * local user can read: nothing secret goes there (the job token stays in the environment).
   */
  async command(dir: string, show: readonly string[], argv: readonly string[], setenv: Readonly<Record<string, string>> = {}): Promise<{ file: string; args: string[] }> {
    if (!this.#bwrap) throw new Error('the payload sandbox was not checked');
    const args = [...BASE];
    // Parents before children, so that a later mount is not buried under an earlier one.
    const hidden: string[] = ['/tmp'];
    const found = (await Promise.all([...this.#o.hide, this.#o.workRoot].map(real))).filter((r): r is { path: string; dir: boolean } => r !== undefined && r.path !== '/');
    found.sort((a, b) => a.path.split(sep).length - b.path.split(sep).length);
    for (const r of found) {
      if (hidden.some((h) => inside(r.path, h))) continue;
      if (r.dir) {
        args.push('--tmpfs', r.path);
        hidden.push(r.path);
      } else {
        args.push('--ro-bind', '/dev/null', r.path);
      }
    }
    for (const file of show) {
      const r = await real(file);
      if (r && hidden.some((h) => inside(r.path, h))) args.push('--ro-bind', r.path, r.path);
    }
    const work = await realpath(dir);
    args.push('--bind', work, work, '--chdir', work);
    for (const [name, value] of Object.entries(setenv)) args.push('--setenv', name, value);
    args.push('--', ...argv);
    return { file: this.#bwrap, args };
  }
}
