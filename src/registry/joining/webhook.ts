/**
 * Joining notifications (docs/registry.md "Webhook"): each request created or decided is POSTed as JSON
 * `{event, request}` to `registry.webhook.url`, signed with `Dirigo-Signature: sha256=<hex HMAC-SHA256 of
 * the body>` keyed by `registry.webhook.secret`. Delivery runs after the write has committed, in the
 * background: a few tries with growing pauses, then a warning in the log. It never delays nor fails the
 * request that caused it. The secret and the signature are never logged.
 */
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Agent, fetch } from 'undici';
import type { RegistryConfig } from '../config-schema.ts';

export type JoinEvent = 'request.created' | 'request.decided';

export interface WebhookLog {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

const silent: WebhookLog = { warn() {}, info() {} };

export function signature(secret: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

export class Webhook {
  readonly #url: string;
  readonly #secret: string;
  readonly #agent: Agent;
  readonly #delays: readonly number[];
  #log: WebhookLog = silent;
  readonly #pending = new Set<Promise<void>>();
  #closed = false;

  /** `delays`: the pauses (ms) before each retry; their count is the number of retries. */
  constructor(config: NonNullable<RegistryConfig['webhook']>, delays: readonly number[] = [1000, 5000, 30_000]) {
    this.#url = config.url;
    this.#secret = config.secret;
    this.#delays = delays;
    // Trust the configured CA bundle (as identityProviders[].verify), else the system's.
    this.#agent = new Agent({ connect: config.verify ? { ca: readFileSync(config.verify, 'utf8') } : {}, headersTimeout: 10_000, bodyTimeout: 10_000 });
  }

  /** Where delivery failures are reported (the server's log, once it exists). */
  logTo(log: WebhookLog): void {
    this.#log = log;
  }

  /** Starts delivering; returns at once. */
  notify(event: JoinEvent, request: { id: number }): void {
    const body = JSON.stringify({ event, request });
    const p = this.#deliver(event, request.id, body).finally(() => this.#pending.delete(p));
    this.#pending.add(p);
  }

  /** Waits for deliveries under way (tests, shutdown). */
  async settled(): Promise<void> {
    while (this.#pending.size) await Promise.all([...this.#pending]);
  }

  /** Stops retrying and drops connections: a shutdown does not wait out the back-off. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#agent.destroy();
  }

  async #deliver(event: JoinEvent, id: number, body: string): Promise<void> {
    const headers = { 'content-type': 'application/json', 'dirigo-signature': signature(this.#secret, body), 'user-agent': 'dirigo-webhook' };
    let problem = '';
    for (let attempt = 0; attempt <= this.#delays.length; attempt++) {
      if (attempt > 0) await new Promise((r) => setTimeout(r, this.#delays[attempt - 1]).unref());
      if (this.#closed) break;
      try {
        const res = await fetch(this.#url, { method: 'POST', body, headers, dispatcher: this.#agent, redirect: 'manual', signal: AbortSignal.timeout(15_000) });
        await res.body?.cancel();
        if (res.ok) {
          this.#log.info({ event, request: id, status: res.status }, 'registry webhook delivered');
          return;
        }
        problem = `HTTP ${res.status}`;
      } catch (err) {
        problem = (err as Error).cause instanceof Error ? ((err as Error).cause as Error).message : (err as Error).message;
      }
    }
    this.#log.warn({ event, request: id, attempts: this.#delays.length + 1, problem }, 'registry webhook: not delivered');
  }
}
