/**
 * One comparison scenario through @dirigo/idp-client, step for step as python_peer.py does it with
 * requests and authlib. Reads {"scenario", "ca"} as JSON on standard input and prints one outcome per
 * step as JSON. A child process of its own, so that the scenario's environment is the process's.
 */
import { text } from 'node:stream/consumers';
import { OAuth2IdProvider, OAuth2Session, OAuthError, Session, type CaseInsensitiveDict, type FilesLike, type OAuth2TokenData } from '../../src/index.ts';

interface Step {
  op: string; url: string; method?: string; params?: Record<string, unknown>; data?: Record<string, string | string[]>;
  json?: unknown; headers?: Record<string, string>; files?: FilesLike; token?: string; hint?: string;
  subject_token?: string; group_scopes?: string[];
}
interface SessionSpec {
  kind: 'requests' | 'oauth2'; trust_env?: boolean; proxies?: Record<string, string>;
  oauth?: { client_id?: string; client_secret?: string; token_endpoint_auth_method?: string; scope?: string; token?: OAuth2TokenData; token_endpoint?: string; hook?: string };
}

/** The 'stamp' protected_request hook: shows what it saw and changes the body. */
function stamp(url: string, headers: CaseInsensitiveDict<string>, body: string): [string, CaseInsensitiveDict<string>, string] {
  headers.set('X-Seen-Authorization', headers.get('Authorization') ?? '');
  return [url, headers, `${body}&stamped=1`];
}

function makeSession(spec: SessionSpec, ca: string): Session | OAuth2Session {
  const common = { verify: ca, trust_env: spec.trust_env ?? true, ...(spec.proxies ? { proxies: spec.proxies } : {}) };
  if (spec.kind !== 'oauth2') return new Session(common);
  const { hook, token_endpoint, ...oauth } = spec.oauth ?? {};
  const s = new OAuth2Session({ ...common, ...oauth, ...(token_endpoint ? { token_endpoint } : {}) });
  if (hook === 'stamp') s.register_compliance_hook('protected_request', stamp);
  return s;
}

function tokenOutcome(t: OAuth2TokenData): unknown {
  const picked = Object.fromEntries(['access_token', 'token_type', 'refresh_token', 'scope'].flatMap((k) => (t[k] === undefined ? [] : [[k, t[k]]])));
  return { token: picked };
}

async function runStep(session: Session | OAuth2Session, spec: SessionSpec, ca: string, step: Step): Promise<unknown> {
  const oauth = session as OAuth2Session;
  switch (step.op) {
    case 'request': {
      const r = await session.request(step.method as string, step.url, {
        ...(step.params ? { params: step.params as never } : {}), ...(step.data ? { data: step.data } : {}),
        ...(step.json !== undefined ? { json: step.json } : {}), ...(step.headers ? { headers: step.headers } : {}),
        ...(step.files ? { files: step.files } : {}),
      });
      return { status: r.status_code, body: r.text };
    }
    case 'fetch_token': return tokenOutcome(await oauth.fetch_token(step.url, step.params as never));
    case 'refresh_token': return tokenOutcome(await oauth.refresh_token(step.url));
    case 'revoke_token': return { status: (await oauth.revoke_token(step.url, { token: step.token ?? null, token_type_hint: step.hint ?? null })).status_code };
    case 'exchange': {
      // The package's DIRAC operation, with the step's group scopes as a configured group.
      const idp = new OAuth2IdProvider({
        verify: ca, trust_env: spec.trust_env ?? true, client_id: spec.oauth?.client_id ?? null, client_secret: spec.oauth?.client_secret ?? null,
        scope: spec.oauth?.scope ?? null, token_endpoint: step.url, group_scopes: { group: step.group_scopes ?? [] },
      });
      const r = await idp.exchangeToken(step.subject_token as string, (step.group_scopes ?? []).length ? 'group' : null);
      await idp.close();
      if (!r.OK) return { error: r.Errno ?? r.Message };
      return tokenOutcome(r.Value);
    }
    default: throw new Error(`unknown op ${step.op}`);
  }
}

const job = JSON.parse(await text(process.stdin)) as { scenario: { session: SessionSpec; steps: Step[] }; ca: string };
const session = makeSession(job.scenario.session, job.ca);
const outcomes: unknown[] = [];
for (const step of job.scenario.steps) {
  try {
    outcomes.push(await runStep(session, job.scenario.session, job.ca, step));
  } catch (e) {
    outcomes.push({ error: e instanceof OAuthError ? e.error : (e as Error).name });
  }
}
await session.close();
process.stdout.write(JSON.stringify(outcomes));
