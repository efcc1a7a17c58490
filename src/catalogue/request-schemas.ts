/**
 * What a catalogue request carries, as TypeBox schemas: path and query parameters, and the JSON bodies.
 * The JSON bodies are checked by these schemas (with TypeBox's own compiler, which coerces nothing, and
 * the catalogue's words for a refusal: schema-errors.ts). The path parameter and the metadata conditions
 * are checked by src/protocol/catalogue-paths.ts and conditions.ts, which refuse at least as much and name the problem; these
 * schemas are then the document's account of those checks (see `handlerChecks`). Bulk lines, read
 * from a stream, are checked by their schemas one by one in bulk.ts.
 */
import type { FastifyRequest } from 'fastify';
import { Type, type TObject, type TProperties, type TString } from 'typebox';
import { MAX_PATH_PARAM_CHARS } from '../protocol/catalogue-paths.ts';
import { FIELD_NAME } from './store/rows.ts';
import { FIELD_SCOPES, FIELD_TYPES, MAX_STRING_VALUE, type FieldScope, type FieldType } from './values.ts';
import { MAX_CONDITIONS, MAX_LIST_VALUES } from './conditions.ts';

/**
 * A preHandler that lets the handler check `parts` itself (attachValidation is on): Fastify's own
 * validation error for them is dropped: the handler's own check (decodePathParam, parseConditions, the
 * field lookup) refuses at least as much and says what is wrong in its own words. A validation error of any other part (a `verbose` that is not a boolean) is
 * answered as Fastify would have answered it, before authentication as before.
 */
export function handlerChecks(...parts: ValidatedPart[]) {
  return async (request: FastifyRequest): Promise<void> => {
    const error = request.validationError;
    if (error && !parts.includes(error.validationContext as ValidatedPart)) throw error;
  };
}

type ValidatedPart = 'params' | 'querystring' | 'body';

/** A preHandler that answers the schema's refusal of `part`, left for later by handlerChecks. */
export function refuseInvalid(part: ValidatedPart) {
  return async (request: FastifyRequest): Promise<void> => {
    const error = request.validationError;
    if (error?.validationContext === part) throw error;
  };
}

export const PathParams = Type.Object({
  path: Type.String({
    // The alphabet of RFC 4648 §5 and optional padding; decodePathParam checks the rest (canonical bits,
    // UTF-8, an absolute canonical path of at most 4096 bytes).
    pattern: '^[A-Za-z0-9_-]+={0,2}$',
    maxLength: MAX_PATH_PARAM_CHARS,
    description:
      'The catalogue path, base64url-encoded (URL-safe base 64, RFC 4648 §5: `-` and `_` instead of `+` and `/`), padded or not. ' +
      'For example `/lhc/run1` is `L2xoYy9ydW4x`. The path is absolute and canonical (no `.`, `..`, empty segment or trailing `/`), at most 4096 bytes.',
    examples: ['L2xoYy9ydW4x'],
  }),
});

const FieldName = Type.String({ pattern: FIELD_NAME.source, description: 'letters, digits and _, starting with a letter; at most 64 characters' });

export const NameParams = Type.Object({ name: FieldName });

export const ListingQuery = Type.Object({
  verbose: Type.Optional(Type.Boolean({ description: 'true gives the full records, the directory itself and its metadata' })),
});
export const RemoveQuery = Type.Object({
  recursive: Type.Optional(Type.Boolean({ description: 'remove the whole subtree (owner or CatalogueAdministrator)' })),
});

export const CONDITIONS_HELP =
  'Metadata conditions are query parameters `field=op|value`, ANDed; repeat a key for a range (`Run=>=|5&Run=<|10`). ' +
  'int/float/date fields: `<` `>` `=` `<=` `>=` `!=`; string fields: `in` `nin` (comma-separated) `=` `!=`. ' +
  `Every condition requires the field to be present. At most ${MAX_CONDITIONS} conditions; \`access_token\` and \`verbose\` are not conditions.`;

// At most what a request line can hold (server.maxHeaderSize, 16 KiB by default).
const Condition = Type.String({ pattern: '^(<=?|>=?|!?=|n?in)\\|', maxLength: 16_384, description: 'operator|value, e.g. `>=|5` or `in|CERN,PIC`' });

/**
 * The conditions as one query parameter object. A query parameter's default serialization is form,
 * exploded (OpenAPI 3.1 §4.8.12.4): each property is a query parameter of its own, `{"Run": ">=|5"}` giving
 * `Run=>=|5`, so that a client generator can send free-form keys. A list value is the key repeated (a
 * range: `{"Run": [">=|5", "<|10"]}` gives `Run=>=|5&Run=<|10`), as a form-exploded array is; the typed
 * client (packages/client) serializes it so. The name `conditions` never appears in the URL.
 */
const conditionsParameter = (fields: string) =>
  Type.Optional(
    Type.Record(Type.String(), Type.Union([Condition, Type.Array(Condition, { minItems: 1, maxItems: MAX_CONDITIONS, description: 'the key repeated: a range (`[">=|5", "<|10"]`)' })]), {
      description:
        `Metadata conditions, each a query parameter of its own: the key is a ${fields} field name, the value \`operator|value\` ` +
        `(see the operation's description), or a list of them for a range (the key repeated); an \`in\`/\`nin\` list holds at most ${MAX_LIST_VALUES} values.`,
      examples: [{ Run: ['>=|5', '<|10'], Site: 'in|CERN,PIC' }],
    }),
  );

export const ConditionsQuery = Type.Object({ conditions: conditionsParameter('directory') });

export const FIND_HELP =
  'Directory and file fields both select: a file matches when its own metadata meets the conditions on file fields and its directory\'s (own and inherited) ' +
  'metadata those on directory fields. Files come a page at a time (`maxFiles`, default 100, at most 1000), in the order of the index walked ' +
  '(by the value of the most selective file condition, else directory by directory); `nextCursor` continues with the same path and conditions. ' +
  '`maxFiles` and `cursor` are not conditions.';

export const FindQuery = Type.Object({
  conditions: conditionsParameter('directory or file'),
  maxFiles: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100, description: 'files per page' })),
  cursor: Type.Optional(Type.String({ maxLength: 4096, description: "the previous page's nextCursor: the page after it, at the same cost however deep" })),
});

// ---- bodies (checked with TypeBox's compiler, not Fastify's Ajv: its type coercion would turn the string
// "5" into a number and blur the type check of metadata values) ----

export const METADATA_BODY_HELP = 'Body: {"field": value, ...}; values must match the field type (int/float: JSON numbers, date: ISO 8601 string, string: string); null removes the value.';
export const FILE_BODY_HELP =
  'Body: {"Size": bytes, "Checksum": text, "ChecksumType"?: text (default Adler32), "GUID"?: text (default a random UUID), "Status"?: text (default AprioriGood), "Mode"?: 420 or "0644", "Metadata"?: {"field": value}}.';

// As parseMode (permissions.ts) reads it.
const Mode = Type.Union([Type.Integer({ minimum: 0, maximum: 0o777 }), Type.String({ pattern: '^(0?[0-7]{3}|[01][0-7]{3})$' })], {
  description: 'permission bits: an integer (420) or octal text ("0644", "1777" with the sticky bit)',
});
const WritableValue = Type.Union([Type.Number(), Type.String({ maxLength: MAX_STRING_VALUE }), Type.Null()]);
const WritableMetadata = Type.Record(Type.String(), WritableValue, { description: '{"field": value}; null removes the value' });

export const FieldDefinition = Type.Object({
  Name: FieldName,
  Type: Type.Unsafe<FieldType>({ type: 'string', enum: [...FIELD_TYPES], description: 'the type of the values' }),
  Scope: Type.Unsafe<FieldScope>({ type: 'string', enum: [...FIELD_SCOPES], description: 'directory fields are inherited by the subtree and select in searches; file fields describe one file' }),
});

/**
 * The same keys as plain strings: what is checked of a field definition (the store names a bad name,
 * type or scope itself); no other key, when the schema allows none.
 */
export function asStrings<P extends TProperties>(schema: TObject<P>): TObject<{ [K in keyof P]: TString }> {
  const strings: TProperties = Object.fromEntries(Object.keys(schema.properties).map((key) => [key, Type.String()]));
  const closed = 'additionalProperties' in schema && schema.additionalProperties === false;
  const options = closed ? { additionalProperties: false } : {};
  return Type.Object(strings, options) as TObject<{ [K in keyof P]: TString }>;
}

export const DirectoryBody = Type.Object({ Mode: Type.Optional(Mode), Metadata: Type.Optional(WritableMetadata) }, { additionalProperties: false });
/** What Fastify checks of PUT /filecatalogue/directory/{path}: the body may be left out (checked as null). */
export const DirectoryBodyOrNone = Type.Union([DirectoryBody, Type.Null()]);

export const FileBody = Type.Object(
  {
    Size: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'bytes' }),
    Checksum: Type.String({ minLength: 1, maxLength: 128 }),
    ChecksumType: Type.Optional(Type.String({ minLength: 1, maxLength: 32, default: 'Adler32' })),
    GUID: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'default: a random UUID' })),
    Status: Type.Optional(Type.String({ minLength: 1, maxLength: 32, default: 'AprioriGood' })),
    Mode: Type.Optional(Mode),
    Metadata: Type.Optional(WritableMetadata),
  },
  { additionalProperties: false },
);

export const MetadataBody = WritableMetadata;

/** Bulk lines (application/x-ndjson), each checked by its own schema (bulk.ts): a field, a directory, a file. */
export const FieldLine = Type.Object({ field: FieldName, type: FieldDefinition.properties.Type, scope: FieldDefinition.properties.Scope }, { additionalProperties: false });
export const DirectoryLine = Type.Object({ dir: Type.String(), metadata: Type.Optional(WritableMetadata), mode: Type.Optional(Mode) }, { additionalProperties: false });
export const FileLine = Type.Object(
  {
    file: Type.String(),
    size: FileBody.properties.Size,
    checksum: FileBody.properties.Checksum,
    checksumType: FileBody.properties.ChecksumType,
    guid: FileBody.properties.GUID,
    status: FileBody.properties.Status,
    mode: Type.Optional(Mode),
    metadata: Type.Optional(WritableMetadata),
  },
  { additionalProperties: false },
);

/** One line of a bulk import: what the document says of the body. */
export const BulkLine = Type.Union(
  [FieldLine, DirectoryLine, FileLine],
  { description: 'Each line of the body is one of these JSON objects; blank lines are skipped. Paths are plain absolute catalogue paths (not base 64).' },
);
