/**
 * The user behind a TLS client certificate. The TLS layer requests a certificate but lets every client in
 * (`rejectUnauthorized: false`); the chain is verified here, once per connection, by the application's
 * own verifier so that RFC 3820 proxies are accepted.
 */
import { X509Certificate } from 'node:crypto';
import type { TLSSocket, DetailedPeerCertificate } from 'node:tls';
import type { FastifyRequest } from 'fastify';
import { CertificateRejected, type VerifiedIdentity } from '../pki/index.ts';
import type { RegistryUser } from '../registry/index.ts';
import { InvalidClient } from '../kernel/errors.ts';
import type { AppContext } from '../kernel/context.ts';

type Outcome = { identity: VerifiedIdentity } | { rejected: string } | { absent: true };

const perConnection = new WeakMap<object, Outcome>();

/** The chain the client sent, leaf first. */
export function peerChain(socket: TLSSocket): X509Certificate[] {
  const chain: X509Certificate[] = [];
  let cert = socket.getPeerCertificate(true) as DetailedPeerCertificate | undefined;
  const seen = new Set<string>();
  while (cert?.raw && !seen.has(cert.fingerprint256)) {
    seen.add(cert.fingerprint256);
    chain.push(new X509Certificate(cert.raw));
    cert = cert.issuerCertificate;
  }
  return chain;
}

function outcomeFor(ctx: AppContext, request: FastifyRequest): Outcome {
  const socket = request.raw.socket as TLSSocket;
  const cached = perConnection.get(socket);
  if (cached) return cached;
  let outcome: Outcome;
  const chain = typeof socket.getPeerCertificate === 'function' ? peerChain(socket) : [];
  if (chain.length === 0) {
    outcome = { absent: true };
  } else {
    try {
      outcome = { identity: ctx.trustStore.verify(chain) };
    } catch (err) {
      if (!(err instanceof CertificateRejected)) throw err;
      outcome = { rejected: err.message };
      request.log.warn({ reason: err.message }, 'client certificate rejected');
    }
  }
  // A certificate can expire during a long keep-alive connection: cache only until the chain's notAfter.
  if (!('identity' in outcome) || outcome.identity.notAfter.getTime() > Date.now() + 60_000) perConnection.set(socket, outcome);
  return outcome;
}

/** The verified certificate identity of the request, or undefined when the client sent none. */
export function certificateIdentity(ctx: AppContext, request: FastifyRequest): VerifiedIdentity | undefined {
  const outcome = outcomeFor(ctx, request);
  if ('absent' in outcome) return undefined;
  if ('rejected' in outcome) throw new InvalidClient(`the client certificate was rejected: ${outcome.rejected}`);
  return outcome.identity;
}

/**
 * The registered user presenting a certificate (flow A).
 * @throws InvalidClient (401) when no certificate, a rejected one, or an unregistered DN is presented.
 */
export function certificateUser(ctx: AppContext, request: FastifyRequest): { user: RegistryUser; identity: VerifiedIdentity } {
  const identity = certificateIdentity(ctx, request);
  if (!identity) throw new InvalidClient('a TLS client certificate is required');
  const user = ctx.registry.userByDn(identity.dn);
  if (!user) throw new InvalidClient(`the certificate subject ${identity.dn} is not a registered user`);
  return { user, identity };
}
