/** The /downloads/ answers: the list, and the headers of a file. */
import { Type } from 'typebox';

/**
 * A file name as offered: letters, digits, `.`, `_`, `+` and `-`, starting with a letter or digit, so that
 * no name is a path (`/`), hidden, `.` or `..`.
 */
export const DOWNLOAD_NAME = '^[A-Za-z0-9][A-Za-z0-9._+-]{0,199}$';

export const DownloadParams = Type.Object({
  name: Type.String({ pattern: DOWNLOAD_NAME, maxLength: 207, description: 'a file of the list, or its name followed by .sha256 for its checksum line (sha256sum format)' }),
});

export const IfNoneMatch = Type.Object({ 'if-none-match': Type.Optional(Type.String({ description: 'the ETag of a copy the client has' })) });

export const Download = Type.Object(
  {
    name: Type.String({ description: 'the file name, as in GET /downloads/{name}' }),
    size: Type.Integer({ minimum: 0, description: 'bytes' }),
    sha256: Type.String({ pattern: '^[0-9a-f]{64}$', description: 'the SHA-256 of the file, hex' }),
    version: Type.Union([Type.String(), Type.Null()], { description: 'the dirigo version of a single executable; null for other files' }),
    api: Type.Union([Type.String(), Type.Null()], { description: 'the API version a single executable speaks; null for other files' }),
    platform: Type.Union([Type.String(), Type.Null()], { description: 'the platform a single executable runs on (linux-x64); null for other files' }),
    url: Type.String({ description: 'where to download it (absolute)' }),
  },
  { additionalProperties: false },
);

export const DownloadList = Type.Object(
  {
    downloads: Type.Array(Download, { description: 'by name' }),
  },
  { additionalProperties: false },
);

export const DownloadHeaders = {
  ETag: Type.String({ description: '"sha256-<hex>": send it back in If-None-Match' }),
  'Content-Disposition': Type.String({ description: 'attachment; filename="<name>"' }),
  'Content-Length': Type.Integer(),
  'Repr-Digest': Type.String({ description: 'RFC 9530: sha-256=:<base64>:' }),
  'X-Content-SHA256': Type.String({ description: 'the SHA-256 of the file, in hex' }),
};
