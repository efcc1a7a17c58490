/**
 * The route schemas of the catalogue's operations: operationId, security, parameters, bodies
 * and every answer, for Fastify and the OpenAPI document alike. routes.ts and bulk.ts hold the handlers.
 */
import { errors, SECURITY } from '../kernel/openapi.ts';
import * as R from './request-schemas.ts';
import * as S from './schemas.ts';

const common = { tags: ['File catalogue'], security: SECURITY.token };

// Every route can answer 400 (bad text anywhere, app.ts), 401 and 403 (the token, the capability); a path
// in the URL longer than any catalogue path is 414 (the wildcard route of routes.ts); a JSON body can be
// too large (413) or not JSON (415).
const answers = (...statuses: number[]) => errors(400, 401, 403, ...statuses);
const readErrors = answers(404, 414);
const writeErrors = answers(404, 409, 413, 414, 415);

export const getCompatibleMetadata = {
  ...common,
  operationId: 'getCompatibleMetadata',
  summary: 'Metadata fields compatible with a condition, with their type and possible values (with conditions: directory fields)',
  description: R.CONDITIONS_HELP,
  querystring: R.ConditionsQuery,
  response: { 200: S.CompatibleMetadata, ...answers() },
};

export const defineMetadataField = {
  ...common,
  operationId: 'defineMetadataField',
  summary: 'Define a metadata field (CatalogueAdministrator)',
  body: R.asStrings(R.FieldDefinition),
  documented: { body: { 'application/json': R.FieldDefinition } },
  response: { 201: S.FieldAnswer, ...answers(409, 413, 415) },
};

export const removeMetadataField = {
  ...common,
  operationId: 'removeMetadataField',
  summary: 'Remove an unused metadata field (CatalogueAdministrator)',
  params: R.NameParams,
  response: { 200: S.Removed, ...answers(404, 409) },
};

export const listDirectory = {
  ...common,
  operationId: 'listDirectory',
  summary: 'Contents of a directory',
  params: R.PathParams,
  querystring: R.ListingQuery,
  response: { 200: S.Listing, ...readErrors },
};

export const createDirectory = {
  ...common,
  operationId: 'createDirectory',
  summary: 'Create a directory and its missing parents',
  description: 'The body `{"Mode"?, "Metadata"?}` may be `{}` or left out. Answers 201 when the directory was created, 200 when it existed (its Mode and Metadata are then set).',
  params: R.PathParams,
  body: R.DirectoryBodyOrNone,
  documented: { body: { 'application/json': R.DirectoryBody } },
  response: { 200: S.DirectoryRecord, 201: S.DirectoryRecord, ...writeErrors },
};

export const removeDirectory = {
  ...common,
  operationId: 'removeDirectory',
  summary: 'Remove an empty directory, or a subtree with recursive=true (owner or administrator)',
  params: R.PathParams,
  querystring: R.RemoveQuery,
  response: { 200: S.RemovedDirectory, ...answers(404, 409, 414) },
};

export const getDirectoryMetadataValues = {
  ...common,
  operationId: 'getDirectoryMetadataValues',
  summary: 'Values of each field among the directories of the subtree compatible with a condition',
  description: R.CONDITIONS_HELP,
  params: R.PathParams,
  querystring: R.ConditionsQuery,
  response: { 200: S.DirectoryValues, ...readErrors },
};

export const setDirectoryMetadata = {
  ...common,
  operationId: 'setDirectoryMetadata',
  summary: 'Set directory metadata ({"field": value}; null removes a value)',
  description: R.METADATA_BODY_HELP,
  params: R.PathParams,
  body: R.MetadataBody,
  documented: { body: { 'application/json': R.MetadataBody } },
  response: { 200: S.MetadataMap, ...writeErrors },
};

export const searchDirectories = {
  ...common,
  operationId: 'searchDirectories',
  summary: 'Directories under a directory matching a condition, with recursive file counts and sizes',
  description: R.CONDITIONS_HELP,
  params: R.PathParams,
  querystring: R.ConditionsQuery,
  response: { 200: S.SearchAnswer, ...readErrors },
};

export const findFiles = {
  ...common,
  operationId: 'findFiles',
  summary: 'Files under a directory matching directory and file metadata conditions, a page at a time (as DIRAC findFilesByMetadata)',
  description: `${R.CONDITIONS_HELP} ${R.FIND_HELP}`,
  params: R.PathParams,
  querystring: R.FindQuery,
  response: { 200: S.FindAnswer, ...readErrors },
};

export const getFileAttributes = {
  ...common,
  operationId: 'getFileAttributes',
  summary: 'File attributes',
  params: R.PathParams,
  response: { 200: S.FileRecord, ...readErrors },
};

export const getFileMetadata = {
  ...common,
  operationId: 'getFileMetadata',
  summary: 'File metadata, own and inherited from its directories',
  params: R.PathParams,
  response: { 200: S.MetadataMap, ...readErrors },
};

export const setFileMetadata = {
  ...common,
  operationId: 'setFileMetadata',
  summary: 'Set file metadata ({"field": value}; null removes a value)',
  description: R.METADATA_BODY_HELP,
  params: R.PathParams,
  body: R.MetadataBody,
  documented: { body: { 'application/json': R.MetadataBody } },
  response: { 200: S.MetadataMap, ...writeErrors },
};

export const registerFile = {
  ...common,
  operationId: 'registerFile',
  summary: 'Register a file (missing parent directories are created)',
  description: R.FILE_BODY_HELP,
  params: R.PathParams,
  body: R.FileBody,
  documented: { body: { 'application/json': R.FileBody } },
  response: { 201: S.FileRecord, ...writeErrors },
};

export const unregisterFile = {
  ...common,
  operationId: 'unregisterFile',
  summary: 'Unregister a file',
  params: R.PathParams,
  response: { 200: S.RemovedFile, ...answers(404, 409, 414) },
};

export const bulkImport = {
  ...common,
  operationId: 'bulkImport',
  summary: 'Apply newline-delimited JSON operations (application/x-ndjson) in bounded transactions',
  description:
    'One operation per line: {"field", "type", "scope"} | {"dir", "metadata"?, "mode"?} | {"file", "size", "checksum", "checksumType"?, "guid"?, "status"?, "mode"?, "metadata"?}. ' +
    'Answers 200 {"applied"} when every line was applied; otherwise the status of the first error with {"applied", "error": {"line", "error", "error_description"}}, where applied counts the lines before it.',
  documented: { body: { 'application/x-ndjson': R.BulkLine } },
  // Whatever the status of the first failing line, the answer is BulkFailure: a server error's too.
  response: { 200: S.BulkApplied, ...errors(401, 415), 400: S.BulkError, 403: S.BulkError, 404: S.BulkError, 409: S.BulkError, 413: S.BulkError, 500: S.BulkError, 503: S.BulkError },
};
