/**
 * The catalogue's operations as the routes call them, with the checks each needs before the store is
 * read or written: the token's storage capabilities, x on every directory above, r on what is read
 * (permissions.ts). The store's write session checks the writes' own permissions inside the transaction.
 * Paths here are plain catalogue paths; the routes decode them from the URL.
 */
import { allowsCapability, requireCapability, type Principal } from '../auth/index.ts';
import type { Db } from '../kernel/db/database.ts';
import type { Static } from 'typebox';
import { NotFound } from '../kernel/errors.ts';
import { parseConditions } from './conditions.ts';
import type { CatalogueConfig } from './config-schema.ts';
import { FIND_PARAMETERS, findPaging } from './find-query.ts';
import { baseName, parentOf } from '../protocol/catalogue-paths.ts';
import { parseMode, READ, requireAllowed, requireTraversable } from './permissions.ts';
import type { DirectoryBodyOrNone, FileBody, MetadataBody } from './request-schemas.ts';
import { newFile } from './requests.ts';
import { CatalogueStore, directoryRecord, fileRecord, type DirRow } from './store.ts';
import type { FieldScope, FieldType } from './values.ts';

export class CatalogueService {
  readonly store: CatalogueStore;

  private constructor(store: CatalogueStore) {
    this.store = store;
  }

  /** The service over a store whose root directory exists. */
  static async open(db: Db, config: CatalogueConfig): Promise<CatalogueService> {
    const store = new CatalogueStore(db, config);
    await store.init();
    return new CatalogueService(store);
  }

  /** Checks the token's storage capability, x on every ancestor and r on the directory. */
  private async readableDirectory(principal: Principal, path: string): Promise<DirRow> {
    requireCapability(principal, 'storage.read', path);
    const { ancestors, dir } = await this.store.withAncestors(path);
    requireTraversable(principal, ancestors, `read ${path}`);
    if (!dir) throw new NotFound(`no directory ${path}`);
    requireAllowed(principal, dir, READ, path, `read ${path}`);
    return dir;
  }

  private async readableFile(principal: Principal, path: string) {
    requireCapability(principal, 'storage.read', path);
    const parent = parentOf(path);
    if (parent === undefined) throw new NotFound(`no file ${path}`);
    // The file's directory is the last of the directories above it: one query for all of them.
    const { ancestors, dir } = await this.store.withAncestors(parent);
    requireTraversable(principal, dir ? [...ancestors, dir] : ancestors, `read ${path}`);
    const file = dir ? await this.store.fileIn(dir, baseName(path)) : undefined;
    if (!dir || !file) throw new NotFound(`no file ${path}`);
    requireAllowed(principal, file, READ, path, `read ${path}`);
    return { dir, file };
  }

  // ---- fields ----

  /** Every field with the values compatible with the conditions of `rawQuery` (DIRAC's getCompatibleMetadata). */
  async compatibleMetadata(principal: Principal, rawQuery: string) {
    requireCapability(principal, 'storage.read', '/');
    const fields = await this.store.fields();
    const tree = parseConditions(rawQuery, fields, { scope: 'directory' });
    // As DIRAC's getCompatibleMetadata: with conditions, the directory fields compatible with them (the
    // values of file fields among every file of the matching directories would cost a scan of the files).
    const values = await this.store.compatibleValues('/', tree, fields, tree.terms.length === 0);
    const out: Record<string, { Type: FieldType; Scope: FieldScope; Values: (string | number)[] }> = {};
    for (const field of fields.values()) {
      const v = values.get(field);
      // Without a condition every field is listed (even without values), so that clients discover them.
      if (v ? true : tree.terms.length === 0) out[field.name] = { Type: field.type, Scope: field.scope, Values: v ?? [] };
    }
    return out;
  }

  /** The store names a bad name, type or scope itself, in its own words. */
  async defineField(principal: Principal, name: string, type: string, scope: string) {
    const field = await this.store.defineField(principal, name, type, scope);
    return { Name: field.name, Type: field.type, Scope: field.scope };
  }

  removeField(principal: Principal, name: string): Promise<void> {
    return this.store.removeField(principal, name);
  }

  // ---- directories ----

  async listDirectory(principal: Principal, path: string, verbose: boolean) {
    const dir = await this.readableDirectory(principal, path);
    const { dirs, files } = await this.store.listing(dir);
    if (!verbose) {
      return {
        Path: dir.path,
        SubDirs: dirs.map((d) => ({ Path: d.path, Name: d.name })),
        Files: files.map((f) => ({ Path: dir.path === '/' ? `/${f.name}` : `${dir.path}/${f.name}`, Name: f.name, Size: Number(f.size) })),
      };
    }
    return {
      Path: dir.path,
      Directory: directoryRecord(dir),
      Metadata: await this.store.directoryMetadata(dir.id, await this.store.fields()),
      SubDirs: dirs.map(directoryRecord),
      Files: files.map((f) => fileRecord(dir.path, f)),
    };
  }

  /** mkdir -p, then the body's Mode and Metadata; `created` tells a new directory from an existing one. */
  async createDirectory(principal: Principal, path: string, body: Static<typeof DirectoryBodyOrNone>) {
    const mode = parseMode(body?.Mode, 'body.Mode');
    const metadata = body?.Metadata ?? {};
    return this.store.write(principal, async (s) => {
      const { dir, created } = await s.mkdirs(path, mode);
      // An existing directory is answered as it is: a token that may neither create nor read there
      // learns nothing of it (mkdirs checks storage.create only when it creates).
      if (!created && !allowsCapability(principal, 'storage.create', path)) requireCapability(principal, 'storage.read', path);
      if (!created && mode !== undefined && mode !== Number(dir.mode)) await s.chmod(dir, mode);
      if (Object.keys(metadata).length > 0) await s.setDirectoryMetadata(dir, metadata);
      return { record: directoryRecord((await this.store.directory(path, s.trx))!), created };
    });
  }

  async removeDirectory(principal: Principal, path: string, recursive: boolean) {
    const removed = await this.store.write(principal, (s) => s.removeDirectory(path, recursive));
    return { Path: path, Directories: removed.directories, Files: removed.files };
  }

  /** The values of every field below the directory, among the directories meeting `rawQuery`'s conditions. */
  async directoryValues(principal: Principal, path: string, rawQuery: string) {
    const dir = await this.readableDirectory(principal, path);
    const fields = await this.store.fields();
    const tree = parseConditions(rawQuery, fields, { scope: 'directory' });
    const values = await this.store.compatibleValues(dir.path, tree, fields);
    const out: Record<string, (string | number)[]> = {};
    for (const [field, list] of [...values].sort(([a], [b]) => (a.name < b.name ? -1 : 1))) out[field.name] = list;
    return out;
  }

  setDirectoryMetadata(principal: Principal, path: string, body: Static<typeof MetadataBody>) {
    return this.store.write(principal, async (s) => {
      const dir = await s.directory(path);
      if (!dir) throw new NotFound(`no directory ${path}`);
      await s.setDirectoryMetadata(dir, body);
      return this.store.directoryMetadata(dir.id, await s.fields(), s.trx);
    });
  }

  async searchDirectories(principal: Principal, path: string, rawQuery: string) {
    const dir = await this.readableDirectory(principal, path);
    const tree = parseConditions(rawQuery, await this.store.fields(), { scope: 'directory' });
    return this.store.search(dir.path, tree);
  }

  async findFiles(principal: Principal, path: string, rawQuery: string) {
    const dir = await this.readableDirectory(principal, path);
    const page = findPaging(rawQuery);
    const fields = await this.store.fields();
    const tree = parseConditions(rawQuery, fields, { scope: 'any', parameters: FIND_PARAMETERS });
    return this.store.find(dir.path, tree, fields, page.maxFiles, page.cursor);
  }

  // ---- files ----

  async fileAttributes(principal: Principal, path: string) {
    const { dir, file } = await this.readableFile(principal, path);
    return fileRecord(dir.path, file);
  }

  async fileMetadata(principal: Principal, path: string) {
    const { dir, file } = await this.readableFile(principal, path);
    return this.store.fileMetadata(dir.id, file.meta, await this.store.fields());
  }

  setFileMetadata(principal: Principal, path: string, body: Static<typeof MetadataBody>) {
    return this.store.write(principal, async (s) => {
      const { dir, file } = await this.store.requireFile(path, s.trx);
      const meta = await s.setFileMetadata(dir, file, body);
      return this.store.fileMetadata(dir.id, meta, await s.fields(), s.trx);
    });
  }

  registerFile(principal: Principal, path: string, body: Static<typeof FileBody>) {
    return this.store.write(principal, async (s) => {
      const { Size: size, Checksum: checksum, ChecksumType: checksumType, GUID: guid, Status: status, Mode: mode, Metadata: metadata } = body;
      // The metadata against the fields defined now, in this transaction.
      await s.registerFiles([newFile(path, { size, checksum, checksumType, guid, status, mode, metadata }, await s.fields(), 'body')]);
      const { dir, file } = await this.store.requireFile(path, s.trx);
      return fileRecord(dir.path, file);
    });
  }

  async unregisterFile(principal: Principal, path: string) {
    await this.store.write(principal, (s) => s.removeFile(path));
    return { Path: path };
  }

  /** Every line of a bulk import writes: a token that may write nowhere (sign-in, read-only) is refused whole. */
  requireImporter(principal: Principal): void {
    if (!allowsCapability(principal, 'storage.create') && !allowsCapability(principal, 'storage.modify')) requireCapability(principal, 'storage.create');
  }
}
