/** TypeBox schemas of the catalogue routes (validation where useful, and the OpenAPI document). */
import { Type } from 'typebox';

export const CONDITIONS_HELP =
  'Metadata conditions are query parameters `field=op|value`, ANDed; repeat a key for a range. ' +
  'int/float/date fields: `<` `>` `=` `<=` `>=` `!=`; string fields: `in` `nin` (comma-separated) `=` `!=`. ' +
  'Every condition requires the field to be present. At most 32 conditions; `access_token` and `verbose` are not conditions.';

export const PathParams = Type.Object({
  path: Type.String({ description: 'the catalogue path as URL-safe base 64 (RFC 4648 §5), padded or not' }),
});
export const NameParams = Type.Object({ name: Type.String() });

export const ListingQuery = Type.Object({
  verbose: Type.Optional(Type.Boolean({ description: 'true gives the full records, the directory itself and its metadata' })),
});
export const RemoveQuery = Type.Object({
  recursive: Type.Optional(Type.Boolean({ description: 'remove the whole subtree (owner or CatalogueAdministrator)' })),
});

const Value = Type.Union([Type.Number(), Type.String()]);

export const DirectoryRecord = Type.Object({
  Path: Type.String(),
  Name: Type.String(),
  Owner: Type.String(),
  OwnerGroup: Type.String(),
  Mode: Type.Integer(),
  CreationDate: Type.String(),
  ModificationDate: Type.String(),
});

export const FileRecord = Type.Object({
  Path: Type.String(),
  Name: Type.String(),
  Size: Type.Integer(),
  Checksum: Type.String(),
  ChecksumType: Type.String(),
  GUID: Type.String(),
  Owner: Type.String(),
  OwnerGroup: Type.String(),
  Mode: Type.Integer(),
  Status: Type.String(),
  CreationDate: Type.String(),
  ModificationDate: Type.String(),
});

export const MetadataMap = Type.Record(Type.String(), Value, { description: '{"field": value}' });

export const Listing = Type.Object({
  Path: Type.String(),
  Directory: Type.Optional(DirectoryRecord),
  Metadata: Type.Optional(MetadataMap),
  SubDirs: Type.Array(
    Type.Object(
      {
        Path: Type.String(),
        Name: Type.String(),
        Owner: Type.Optional(Type.String()),
        OwnerGroup: Type.Optional(Type.String()),
        Mode: Type.Optional(Type.Integer()),
        CreationDate: Type.Optional(Type.String()),
        ModificationDate: Type.Optional(Type.String()),
      },
    ),
  ),
  Files: Type.Array(
    Type.Object({
      Path: Type.String(),
      Name: Type.String(),
      Size: Type.Integer(),
      Checksum: Type.Optional(Type.String()),
      ChecksumType: Type.Optional(Type.String()),
      GUID: Type.Optional(Type.String()),
      Owner: Type.Optional(Type.String()),
      OwnerGroup: Type.Optional(Type.String()),
      Mode: Type.Optional(Type.Integer()),
      Status: Type.Optional(Type.String()),
      CreationDate: Type.Optional(Type.String()),
      ModificationDate: Type.Optional(Type.String()),
    }),
  ),
});

export const CompatibleMetadata = Type.Record(
  Type.String(),
  Type.Object({ Type: Type.String(), Scope: Type.String(), Values: Type.Array(Value) }),
  { description: '{"field": {"Type", "Scope", "Values"}}' },
);

export const DirectoryValues = Type.Record(Type.String(), Type.Array(Value), { description: '{"field": [values]}' });

export const SearchAnswer = Type.Object({
  Path: Type.String(),
  Directories: Type.Array(Type.Object({ Path: Type.String(), Files: Type.Integer(), Size: Type.Integer() })),
  Files: Type.Integer({ description: 'files directly in the matching directories (each counted once)' }),
  Size: Type.Integer(),
});

export const FieldDefinition = Type.Object({
  Name: Type.String({ description: 'letters, digits and _, starting with a letter' }),
  Type: Type.String({ description: 'int, float, string or date' }),
  Scope: Type.String({ description: 'directory or file' }),
});
export const FieldAnswer = FieldDefinition;

// Write bodies are validated by hand (requests.ts), not by Ajv: its type coercion would turn the string
// "5" into a number and blur the type check of metadata values.
export const METADATA_BODY_HELP = 'Body: {"field": value, ...}; values must match the field type (int/float: JSON numbers, date: ISO 8601 string, string: string); null removes the value.';
export const FILE_BODY_HELP =
  'Body: {"Size": bytes, "Checksum": text, "ChecksumType"?: text (default Adler32), "GUID"?: text (default a random UUID), "Status"?: text (default AprioriGood), "Mode"?: 420 or "0644", "Metadata"?: {"field": value}}.';

export const Removed = Type.Object({ removed: Type.String() });
export const RemovedDirectory = Type.Object({ Path: Type.String(), Directories: Type.Integer(), Files: Type.Integer() });
export const RemovedFile = Type.Object({ Path: Type.String() });

export const BulkAnswer = Type.Object({
  applied: Type.Integer({ description: 'operations applied (all lines before the first error)' }),
  error: Type.Optional(Type.Object({ line: Type.Integer(), error: Type.String(), error_description: Type.String() })),
});

// Request bodies, as requests.ts and bulk.ts check them (by hand, see above): the document's account of them.
const Mode = Type.Union([Type.Integer({ minimum: 0, maximum: 0o777 }), Type.String({ pattern: '^0?[0-7]{3}$' })], { description: 'permission bits: 420 or "0644"' });
const WritableMetadata = Type.Record(Type.String(), Type.Union([Type.Number(), Type.String(), Type.Null()]), { description: '{"field": value}; null removes the value' });

export const DirectoryBody = Type.Object({ Mode: Type.Optional(Mode), Metadata: Type.Optional(WritableMetadata) }, { additionalProperties: false });

export const FileBody = Type.Object(
  {
    Size: Type.Integer({ minimum: 0, description: 'bytes' }),
    Checksum: Type.String(),
    ChecksumType: Type.Optional(Type.String({ default: 'Adler32' })),
    GUID: Type.Optional(Type.String({ description: 'default: a random UUID' })),
    Status: Type.Optional(Type.String({ default: 'AprioriGood' })),
    Mode: Type.Optional(Mode),
    Metadata: Type.Optional(WritableMetadata),
  },
  { additionalProperties: false },
);

export const MetadataBody = WritableMetadata;

/** One line of a bulk import (application/x-ndjson): a field, a directory or a file. */
export const BulkLine = Type.Union([
  Type.Object({ field: Type.String(), type: Type.String(), scope: Type.String() }),
  Type.Object({ dir: Type.String(), metadata: Type.Optional(WritableMetadata), mode: Type.Optional(Mode) }),
  Type.Object({
    file: Type.String(),
    size: Type.Integer({ minimum: 0 }),
    checksum: Type.String(),
    checksumType: Type.Optional(Type.String()),
    guid: Type.Optional(Type.String()),
    status: Type.Optional(Type.String()),
    mode: Type.Optional(Mode),
    metadata: Type.Optional(WritableMetadata),
  }),
], { description: 'each line of the body is one of these JSON objects' });
