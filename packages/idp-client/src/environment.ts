/** Proxy and CA settings from the environment, with requests' rules (trust_env). */
import { BlockList, isIP } from 'node:net';
import type { Proxies } from './models.ts';

function env(name: string): string | undefined {
  const v = process.env[name.toLowerCase()] ?? process.env[name.toUpperCase()];
  return v === '' ? undefined : v;
}

/** `http_proxy`, `https_proxy`, `all_proxy` (lower case first, as curl and requests do). */
export function getEnvironProxiesRaw(): Proxies {
  const out: Proxies = {};
  for (const scheme of ['http', 'https', 'all']) {
    const v = env(`${scheme}_proxy`);
    if (v) out[scheme] = v;
  }
  const np = env('no_proxy');
  if (np) out.no_proxy = np;
  return out;
}

/**
 * Whether `url` goes direct: NO_PROXY entries are host names (matching the host and its subdomains,
 * a leading dot optional), host:port, IP addresses, CIDR ranges, or `*`.
 * @example
 * shouldBypassProxies('https://db.internal.example/', 'internal.example,10.0.0.0/8'); // true
 */
export function shouldBypassProxies(url: string, noProxy: string | null | undefined): boolean {
  const list = noProxy ?? env('no_proxy');
  if (!list) return false;
  let u: URL;
  try { u = new URL(url); } catch { return false; }
  const host = u.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  const port = u.port || (u.protocol === 'https:' ? '443' : '80');
  for (const raw of list.split(/[,\s]+/)) {
    const entry = raw.trim().toLowerCase();
    if (!entry) continue;
    if (entry === '*') return true;
    if (entry.includes('/')) {
      const [net, bits] = entry.split('/');
      const family = isIP(net ?? '');
      if (family && isIP(host) === family) {
        const bl = new BlockList();
        const prefix = Number(bits);
        if (Number.isInteger(prefix)) {
          bl.addSubnet(net as string, prefix, family === 6 ? 'ipv6' : 'ipv4');
          if (bl.check(host, family === 6 ? 'ipv6' : 'ipv4')) return true;
        }
      }
      continue;
    }
    let entryHost = entry;
    let entryPort: string | null = null;
    const m = /^(\[[^\]]+\]|[^:]+):(\d+)$/.exec(entry);
    if (m) { entryHost = m[1] as string; entryPort = m[2] as string; }
    entryHost = entryHost.replace(/^\[|\]$/g, '').replace(/^\*?\./, '');
    if (entryPort !== null && entryPort !== port) continue;
    if (host === entryHost || (!isIP(host) && host.endsWith(`.${entryHost}`))) return true;
  }
  return false;
}

/** Proxies from the environment for `url`, or none when NO_PROXY covers it. */
export function getEnvironProxies(url: string, noProxy?: string | null): Proxies {
  if (shouldBypassProxies(url, noProxy)) return {};
  const p = getEnvironProxiesRaw();
  delete p.no_proxy;
  return p;
}

/** requests' select_proxy: scheme://host, then scheme, then all://host, then all. */
export function selectProxy(url: string, proxies: Proxies | null | undefined): string | undefined {
  if (!proxies) return undefined;
  let any = false;
  for (const k in proxies) if (k !== 'no_proxy') { any = true; break; }
  if (!any) return undefined;
  const u = new URL(url);
  const scheme = u.protocol.slice(0, -1);
  if (!u.hostname) return proxies[scheme] ?? proxies.all;
  for (const key of [`${scheme}://${u.hostname}`, scheme, `all://${u.hostname}`, 'all']) {
    if (proxies[key]) return proxies[key];
  }
  return undefined;
}

/** The CA bundle named by REQUESTS_CA_BUNDLE or CURL_CA_BUNDLE. */
export function environCaBundle(): string | undefined {
  return env('REQUESTS_CA_BUNDLE') ?? env('CURL_CA_BUNDLE');
}
