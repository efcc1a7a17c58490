/** The shapes of /sandboxes (docs/sandboxes.md "Direct transfers"), and of presigned downloads. */
import type { Readable } from 'node:stream';
import { Type } from 'typebox';

/** The tar.gz as a handler answers it: the store's stream, sent as it is, never serialized. */
export const SandboxStream = Type.Unsafe<Readable>({ type: 'string', contentMediaType: 'application/gzip' });

const Sha256 = Type.String({ pattern: '^[0-9a-f]{64}$', description: 'SHA-256 of the tar.gz, 64 lowercase hex digits' });

export const Sha256Params = Type.Object({ sha256: Sha256 });

export const AnnounceBody = Type.Object({ sha256: Sha256, size: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'bytes of the tar.gz' }) }, { additionalProperties: false });

export const PresignedUpload = Type.Object(
  {
    url: Type.String({ description: 'where to send the bytes' }),
    method: Type.Literal('PUT'),
    headers: Type.Record(Type.String(), Type.String(), { description: 'headers to send exactly as given (the signature covers them)' }),
  },
  { description: 'A presigned upload, bound to the sha256 and the size' },
);

export const SandboxExists = Type.Object({ sha256: Sha256, size: Type.Integer({ minimum: 0 }), exists: Type.Literal(true) }, { description: 'Verified and visible to you: nothing to send' });

export const SandboxUpload = Type.Object(
  {
    sha256: Sha256,
    size: Type.Integer({ minimum: 0 }),
    exists: Type.Literal(false),
    upload: PresignedUpload,
    expiresAt: Type.String({ format: 'date-time', description: 'when the upload URL stops working' }),
  },
  { description: 'Send the bytes to upload.url' },
);

/** The signed query of an API-presigned URL (the file store's; src/jobs/sandbox-urls.ts). */
export const SignedQuery = Type.Object({
  expires: Type.String({ pattern: '^[0-9]{1,15}$', description: 'Unix time after which the URL is refused' }),
  signature: Type.String({ pattern: '^[0-9a-f]{64}$' }),
  size: Type.Optional(Type.String({ pattern: '^[0-9]{1,16}$', description: "an upload's size" })),
  name: Type.Optional(Type.String({ maxLength: 255, description: "a download's file name" })),
});

export const Received = Type.Object({ sha256: Sha256, size: Type.Integer({ minimum: 0 }) }, { description: 'Stored and verified' });

/** A download's presigned URL, for `Accept: application/json`. */
export const PresignedDownload = Type.Object(
  {
    url: Type.String({ description: 'GET it (no token): short-lived' }),
    expiresAt: Type.String({ format: 'date-time' }),
    sha256: Sha256,
    size: Type.Integer({ minimum: 0 }),
  },
  { description: 'A short-lived presigned URL of the sandbox' },
);

/** `?via=api`: the bytes through the API even where the store presigns downloads. */
export const ViaQuery = Type.Object({ via: Type.Optional(Type.Literal('api', { description: 'api: the bytes through the API rather than a redirect to the store' })) });

export const RedirectHeaders = {
  Location: Type.String({ description: 'a presigned URL of the store, valid a short time' }),
  ETag: Type.String({ description: '"sha256-<hex>": send it back in If-None-Match (304 instead of a redirect)' }),
  'X-Content-SHA256': Type.String({ description: 'the SHA-256 of the archive, in hex' }),
};
