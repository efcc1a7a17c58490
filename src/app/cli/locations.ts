/**
 * Where `dirigo serve` and `dirigo init` find their configuration and keep their state, so that the same
 * command works from a checkout (./dirigo-data) and installed system-wide under systemd
 * (deploy/systemd/dirigo.service, docs/deployment.md), which sets CONFIGURATION_DIRECTORY=/etc/dirigo and
 * STATE_DIRECTORY=/var/lib/dirigo. The first that is given wins:
 * - data dir: `--data-dir`, `DIRIGO_DATA_DIR`, `STATE_DIRECTORY`, `./dirigo-data`;
 * - config file: `--config`, `DIRIGO_CONFIG`, `config.yaml` in `CONFIGURATION_DIRECTORY` when it is there;
 *   otherwise the data dir's own `config.yaml`, written with the embedded default on the first start.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { environment } from '../../kernel/config.ts';

/** A path and what named it (`--config`, `CONFIGURATION_DIRECTORY`, ...), which the banner shows. */
export interface Located {
  path: string;
  source: string;
}

export interface ServeLocations {
  dataDir: Located;
  /** Undefined: the data dir's config.yaml, bootstrapped when missing. */
  config?: Located;
}

/** systemd passes one absolute path per directory, colon-separated; Dirigo asks for one. */
function firstOf(list: string | undefined): string | undefined {
  return list?.split(':').find((p) => p !== '');
}

/** The data dir and config file `values` (the command's flags) and the environment name. */
export function serveLocations(values: { 'data-dir'?: string | undefined; config?: string | undefined }): ServeLocations {
  const dataDirs: Array<[string | undefined, string]> = [
    [values['data-dir'], '--data-dir'],
    [environment.get('DIRIGO_DATA_DIR'), 'DIRIGO_DATA_DIR'],
    [firstOf(environment.get('STATE_DIRECTORY')), 'STATE_DIRECTORY'],
    ['./dirigo-data', 'the default'],
  ];
  const [dir, dirSource] = dataDirs.find(([p]) => p) as [string, string];
  const dataDir = { path: resolve(dir), source: dirSource };
  if (values.config) return { dataDir, config: { path: values.config, source: '--config' } };
  const fromEnv = environment.get('DIRIGO_CONFIG');
  if (fromEnv) return { dataDir, config: { path: fromEnv, source: 'DIRIGO_CONFIG' } };
  const confDir = firstOf(environment.get('CONFIGURATION_DIRECTORY'));
  // An empty /etc/dirigo is no mistake: the service then starts on the embedded default in its state dir.
  if (confDir && existsSync(join(confDir, 'config.yaml'))) return { dataDir, config: { path: join(confDir, 'config.yaml'), source: 'CONFIGURATION_DIRECTORY' } };
  return { dataDir };
}
