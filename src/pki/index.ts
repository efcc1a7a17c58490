/** X.509 for the grid: certificate and RFC 3820 proxy chain verification, and the development CA. */
export { CertificateRejected, TrustStore, type VerifiedIdentity } from './chain.ts';
export { userDn, writeDevelopmentPki } from './dev-ca.ts';
export { OID, parseCertificate } from './certificate.ts';
export { makeProxy } from './proxy.ts';
