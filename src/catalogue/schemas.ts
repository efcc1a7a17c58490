/**
 * TypeBox schemas of the catalogue's answers (request-schemas.ts has what requests carry). They are the
 * response schemas fast-json-stringify serializes with, so each one holds every key its handler returns.
 */
import { Type } from 'typebox';
import { ErrorBody, LimitBody } from '../kernel/schemas.ts';
import { FieldDefinition } from './request-schemas.ts';

const Value = Type.Union([Type.Number(), Type.String()], { description: 'int/float: a number; date: ISO 8601 text; string: text' });

export const DirectoryRecord = Type.Object(
  {
    Path: Type.String(),
    Name: Type.String(),
    Owner: Type.String(),
    OwnerGroup: Type.String(),
    Mode: Type.Integer({ minimum: 0, maximum: 0o1777, description: 'permission bits (420 is 0644)' }),
    CreationDate: Type.String(),
    ModificationDate: Type.String(),
  },
  { description: 'A directory' },
);

export const FileRecord = Type.Object(
  {
    ...DirectoryRecord.properties,
    Size: Type.Integer({ minimum: 0, description: 'bytes' }),
    Checksum: Type.String(),
    ChecksumType: Type.String(),
    GUID: Type.String(),
    Status: Type.String(),
  },
  { description: 'A file' },
);

export const MetadataMap = Type.Record(Type.String(), Value, { description: '{"field": value}' });

/** A listing's entries: Path and Name (and a file's Size) always, the rest of the record with verbose=true. */
const ListedDirectory = Type.Evaluate(Type.Intersect([Type.Pick(DirectoryRecord, ['Path', 'Name']), Type.Partial(Type.Omit(DirectoryRecord, ['Path', 'Name']))]));
const ListedFile = Type.Evaluate(Type.Intersect([Type.Pick(FileRecord, ['Path', 'Name', 'Size']), Type.Partial(Type.Omit(FileRecord, ['Path', 'Name', 'Size']))]));

export const Listing = Type.Object(
  {
    Path: Type.String(),
    Directory: Type.Optional(DirectoryRecord),
    Metadata: Type.Optional(MetadataMap),
    SubDirs: Type.Array(ListedDirectory),
    Files: Type.Array(ListedFile),
  },
  { description: 'The directory contents; with verbose=true also the directory itself, its metadata and full records' },
);

export const CompatibleMetadata = Type.Record(
  Type.String(),
  Type.Object({ Type: FieldDefinition.properties.Type, Scope: FieldDefinition.properties.Scope, Values: Type.Array(Value) }),
  { description: '{"field": {"Type", "Scope", "Values"}}' },
);

export const DirectoryValues = Type.Record(Type.String(), Type.Array(Value), { description: '{"field": [values]}' });

export const SearchAnswer = Type.Object(
  {
    Path: Type.String(),
    Directories: Type.Array(Type.Object({ Path: Type.String(), Files: Type.Integer({ minimum: 0 }), Size: Type.Integer({ minimum: 0 }) })),
    Files: Type.Integer({ minimum: 0, description: 'files directly in the matching directories (each counted once)' }),
    Size: Type.Integer({ minimum: 0 }),
  },
  { description: 'The matching directories, each with the files and bytes of its subtree, and the totals' },
);

export const FindAnswer = Type.Object(
  {
    Path: Type.String({ description: 'the directory searched' }),
    Files: Type.Array(
      Type.Object({ ...FileRecord.properties, Metadata: Type.Record(Type.String(), Value, { description: "the file's own metadata and its directory's (own and inherited)" }) }),
      { description: 'the matching files of this page' },
    ),
    nextCursor: Type.Unsafe<string | null>({ type: ['string', 'null'], description: 'pass as cursor for the page after this one (same path and conditions); null on the last page' }),
  },
  { description: 'A page of the matching files, with their attributes and metadata' },
);

export const FieldAnswer = Type.Object(FieldDefinition.properties, { description: 'The field defined' });

export const Removed = Type.Object({ removed: Type.String() }, { description: 'The field removed' });
export const RemovedDirectory = Type.Object(
  { Path: Type.String(), Directories: Type.Integer({ minimum: 0 }), Files: Type.Integer({ minimum: 0 }) },
  { description: 'The directories and files removed' },
);
export const RemovedFile = Type.Object({ Path: Type.String() }, { description: 'The file unregistered' });

export const BulkApplied = Type.Object(
  { applied: Type.Integer({ minimum: 0, description: 'operations applied (every line)' }) },
  { title: 'BulkApplied', description: 'Every line was applied' },
);

/** A bulk import that stopped at a line: more than the Error schema says, so its own schema. */
export const BulkFailure = Type.Object(
  {
    applied: Type.Integer({ minimum: 0, description: 'operations applied (all lines before the first error)' }),
    error: Type.Object(
      { line: Type.Integer({ minimum: 1 }), error: Type.String(), error_description: Type.String(), limit: Type.Optional(LimitBody) },
      { description: 'the first failing line and why' },
    ),
  },
  { title: 'BulkFailure' },
);

/** A failing line's answer, or the Error of a request refused as a whole (a JSON body, a token refused). */
export const BulkError = Type.Union([BulkFailure, ErrorBody], {
  description: 'BulkFailure when a line failed (the lines before it are applied); Error when the request as a whole was refused',
});
