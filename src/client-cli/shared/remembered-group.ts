/**
 * The group the CLI signs in with when --group is not given, as DIRAC users have a default group: the
 * one chosen at `dirigo login` or given to `dirigo proxy init --group`, per service URL, in
 * `<config home>/dirigo/groups.json`. A preference, not a credential: `dirigo logout` keeps it.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { environment } from '../../kernel/config.ts';
import { CliError } from '../../terminal/output.ts';

export function rememberedGroupsPath(): string {
  return join(environment.configHome(), 'dirigo', 'groups.json');
}

function read(): Record<string, string> {
  const path = rememberedGroupsPath();
  if (!existsSync(path)) return {};
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as Record<string, string>;
  } catch {
    throw new CliError(`${path} is unreadable; delete it (it only remembers groups) or pass --group`);
  }
}

export function rememberedGroup(url: string): string | undefined {
  const group = read()[url];
  return typeof group === 'string' && group !== '' ? group : undefined;
}

export function rememberGroup(url: string, group: string): void {
  const path = rememberedGroupsPath();
  const groups = { ...read(), [url]: group };
  mkdirSync(join(path, '..'), { recursive: true, mode: 0o700 });
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(groups, null, 2)}\n`, { mode: 0o600 });
  renameSync(tmp, path);
}
