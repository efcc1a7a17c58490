/**
 * `dirigo proxy init|info|destroy`: RFC 3820 proxies as `grid-proxy-init`, `grid-proxy-info` and
 * `grid-proxy-destroy` make, read and remove them, in the same places (grid-credentials.ts).
 */
import { X509Certificate } from 'node:crypto';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { CliError, EXIT } from '../../terminal/output.ts';
import { unknownWord } from '../../terminal/suggest.ts';
import { proxyFilePath, userCertificate } from '../shared/grid-credentials.ts';
import { serviceUrl } from '../shared/http.ts';
import { rememberGroup } from '../shared/remembered-group.ts';
import { makeProxy, OID, parseCertificate } from '../../pki/index.ts';

const USAGE = `usage: dirigo proxy <command> [options]

commands:
  init     make a proxy from the user certificate (--cert/--key, X509_USER_CERT/KEY, or ~/.globus)
             --valid H:M (default 12:00)  --bits N (default 2048)  --limited  --path-length N  --out FILE  --json
             -g|--group G: remember G as the group for the service (--url URL or DIRIGO_URL), as
             dirac-proxy-init -g does; commands signing in with a certificate use it without --group
  info     describe a proxy: subject, issuer, identity, type, strength, time left (--json)
  destroy  remove the proxy file

The proxy file is --out (init) or --file, otherwise X509_USER_PROXY, otherwise /tmp/x509up_u<uid>.

examples:
  dirigo proxy init --valid 24:00 --bits 2048
  dirigo proxy init --group dirigo_prod --url https://dirigo.example.org
  dirigo proxy info --file x509up --json
  dirigo proxy destroy
`;

const OPTIONS = {
  cert: { type: 'string' },
  key: { type: 'string' },
  out: { type: 'string' },
  file: { type: 'string' },
  valid: { type: 'string' },
  bits: { type: 'string' },
  limited: { type: 'boolean' },
  'path-length': { type: 'string' },
  group: { type: 'string', short: 'g' },
  url: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>['values'];

/** `H:M` or hours → seconds. */
function lifetime(text: string): number {
  const m = /^(\d{1,4})(?::(\d{1,2}))?$/.exec(text);
  if (!m || Number(m[2] ?? 0) > 59) throw new CliError(`--valid takes H:M (12:00) or hours, not '${text}'`, EXIT.usage);
  const seconds = Number(m[1]) * 3600 + Number(m[2] ?? 0) * 60;
  if (seconds === 0) throw new CliError('--valid must be longer than zero', EXIT.usage);
  return seconds;
}

async function init(values: Values): Promise<number> {
  const found = values.cert ? { cert: values.cert, key: values.key ?? values.cert, source: '--cert' } : userCertificate();
  if (!found) throw new CliError('no user certificate: pass --cert and --key, set X509_USER_CERT and X509_USER_KEY, or put usercert.pem and userkey.pem in ~/.globus', EXIT.usage);
  const bits = Number(values.bits ?? 2048);
  if (![1024, 2048, 3072, 4096].includes(bits)) throw new CliError(`--bits takes 1024, 2048, 3072 or 4096, not '${values.bits}'`, EXIT.usage);
  const pathLength = values['path-length'] === undefined ? undefined : Number(values['path-length']);
  if (pathLength !== undefined && !(Number.isInteger(pathLength) && pathLength >= 0 && pathLength < 100)) throw new CliError('--path-length takes a number from 0', EXIT.usage);
  const read = (file: string, what: string) => {
    try {
      return readFileSync(file, 'utf8');
    } catch (err) {
      throw new CliError(`cannot read the ${what} ${file}: ${(err as Error).message}`);
    }
  };
  const chainPem = read(found.cert, 'certificate');
  const { pem, certificate } = await makeProxy({ chainPem, keyPem: read(found.key, 'key'), lifetimeSeconds: lifetime(values.valid ?? '12:00'), bits, limited: values.limited ?? false, ...(pathLength === undefined ? {} : { pathLength }) }).catch((err: Error) => {
    throw new CliError(`cannot make the proxy: ${err.message}`);
  });
  const out = values.out ?? proxyFilePath();
  writeFileSync(out, pem, { mode: 0o600 });
  const identity = parseCertificate(chainPem).subjectDn;
  // The service checks the group at each sign-in, and lists the right ones when it is wrong.
  const remembered = values.group === undefined ? undefined : { group: values.group, url: serviceUrl(values) };
  if (remembered) rememberGroup(remembered.url, remembered.group);
  process.stdout.write(
    values.json
      ? `${JSON.stringify({ identity, path: out, notAfter: certificate.notAfter.toISOString(), ...(remembered ?? {}) }, null, 2)}\n`
      : `Your identity: ${identity}\nYour proxy is valid until: ${certificate.notAfter.toUTCString()}\nProxy written to ${out}\n` +
          (remembered ? `Group ${remembered.group} remembered for ${remembered.url}\n` : ''),
  );
  return EXIT.ok;
}

function info(values: Values): number {
  const file = values.file ?? proxyFilePath();
  if (!existsSync(file)) throw new CliError(`no proxy at ${file}: make one with dirigo proxy init`, EXIT.notFound);
  const pems = readFileSync(file, 'utf8').match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  if (pems.length === 0) throw new CliError(`${file} holds no certificate`);
  const chain = pems.map((pem) => parseCertificate(pem));
  const proxy = chain[0]!;
  const identity = chain.find((c) => !c.proxy)?.subjectDn ?? proxy.issuerDn;
  const key = new X509Certificate(pems[0]!).publicKey;
  const left = Math.max(0, Math.floor((proxy.notAfter.getTime() - Date.now()) / 1000));
  const type = !proxy.proxy
    ? 'not a proxy'
    : proxy.proxy.policyLanguage === OID.pplLimited
      ? 'RFC 3820 compliant limited proxy'
      : proxy.proxy.policyLanguage === OID.pplInheritAll
        ? 'RFC 3820 compliant impersonation proxy'
        : 'RFC 3820 compliant restricted proxy';
  const data = {
    subject: proxy.subjectDn,
    issuer: proxy.issuerDn,
    identity,
    type,
    strength: key.asymmetricKeyDetails?.modulusLength ?? 0,
    pathLength: proxy.proxy?.pathLength ?? null,
    path: file,
    timeleft: left,
  };
  if (values.json) {
    process.stdout.write(`${JSON.stringify(data, null, 2)}\n`);
  } else {
    const hms = `${Math.floor(left / 3600)}:${String(Math.floor((left % 3600) / 60)).padStart(2, '0')}:${String(left % 60).padStart(2, '0')}`;
    process.stdout.write(
      `subject  : ${data.subject}\nissuer   : ${data.issuer}\nidentity : ${data.identity}\ntype     : ${data.type}\nstrength : ${data.strength} bits\n` +
        `path     : ${data.path}\ntimeleft : ${hms}${left === 0 ? '  (expired)' : ''}\n`,
    );
  }
  return left > 0 ? EXIT.ok : EXIT.failure;
}

export async function proxyCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  const [sub] = positionals;
  if (values.help || !sub) {
    process.stdout.write(USAGE);
    return sub || values.help ? EXIT.ok : EXIT.usage;
  }
  switch (sub) {
    case 'init':
      return init(values);
    case 'info':
      return info(values);
    case 'destroy': {
      const file = values.file ?? proxyFilePath();
      if (!existsSync(file)) throw new CliError(`no proxy at ${file}`, EXIT.notFound);
      rmSync(file);
      process.stdout.write(`removed ${file}\n`);
      return EXIT.ok;
    }
    default:
      throw new CliError(`${unknownWord('proxy command', sub, ['init', 'info', 'destroy'])}\n\n${USAGE}`, EXIT.usage);
  }
}
