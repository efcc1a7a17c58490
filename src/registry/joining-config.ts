/**
 * The joining parts of the `registry` section that name files (`aup.file`, `webhook.verify`): resolved
 * against the data dir and checked at load, so a missing file stops the start with the key named.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { ConfigError } from '../kernel/config.ts';
import type { RegistryConfig } from './config-schema.ts';

const readable = (path: string) => existsSync(path) && statSync(path).isFile();

/** Resolves the file names in place. @throws ConfigError naming the key of a missing file or a bad AUP. */
export function checkJoiningConfig(registry: RegistryConfig, source: string, abs: (path: string) => string): void {
  const aup = registry.aup;
  if (aup) {
    if ((aup.text === undefined) === (aup.file === undefined)) throw new ConfigError(`${source}: registry.aup: give exactly one of text and file`);
    if (aup.file !== undefined) {
      aup.file = abs(aup.file);
      if (!readable(aup.file)) throw new ConfigError(`${source}: registry.aup.file: '${aup.file}' is not a readable file`);
    }
  }
  const hook = registry.webhook;
  if (hook?.verify !== undefined) {
    hook.verify = abs(hook.verify);
    if (!readable(hook.verify)) throw new ConfigError(`${source}: registry.webhook.verify: CA bundle '${hook.verify}' is not a readable file`);
  }
}

/** The AUP text config.yaml gives (inline, or its file's content). */
export function configAupText(aup: NonNullable<RegistryConfig['aup']>): string {
  return aup.text ?? readFileSync(aup.file!, 'utf8');
}
