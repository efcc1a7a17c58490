/** What joining needs at run time, built once by the composition root and shared as `ctx.joining`. */
import type { AppConfig } from '../../kernel/config.ts';
import type { Db } from '../../kernel/db/database.ts';
import { configAupText } from '../joining-config.ts';
import type { Registry } from '../registry.ts';
import { AupAdmin } from './aup.ts';
import { Joining } from './requests.ts';
import { Webhook } from './webhook.ts';

export interface JoiningServices {
  requests: Joining;
  aup: AupAdmin;
  webhook: Webhook | undefined;
}

/** Seeds config.yaml's AUP (registry.aup) and sets up the webhook. */
export async function startJoining(db: Db, registry: Registry, config: Pick<AppConfig, 'registry'>): Promise<JoiningServices> {
  const webhook = config.registry.webhook ? new Webhook(config.registry.webhook) : undefined;
  const aup = new AupAdmin(db, registry);
  const seed = config.registry.aup;
  if (seed) await aup.seed({ version: seed.version, text: configAupText(seed), validDays: seed.validDays });
  return { requests: new Joining(db, registry, webhook), aup, webhook };
}

declare module '../../kernel/context.ts' {
  interface AppContext {
    readonly joining: JoiningServices;
  }
}
