/**
 * Writes inside one transaction, with a cache of the directories seen: what the routes and the bulk
 * import call. Each operation lives with its concern (namespace, directory values, files).
 */
import type { DirRow, FileRow, NewFile, PreparedDirectory } from './rows.ts';
import { Session } from './session.ts';
import { chmod, createDirectories, mkdirs, prepareDirectory, removeDirectory } from './namespace.ts';
import { setDirectoryMetadata } from './directory-values.ts';
import { registerFiles, removeFile, setFileMetadata } from './files.ts';

export class WriteSession extends Session {
  /** `mkdir -p`: creates `path` and its missing ancestors, owned by the caller. */
  mkdirs(path: string, mode?: number): Promise<{ dir: DirRow; created: boolean }> {
    return mkdirs(this, path, mode);
  }

  /** Checks a bulk directory line for createDirectories; undefined when it must be applied alone. */
  prepareDirectory(path: string, metadata: Record<string, unknown>, pending: ReadonlySet<string>): Promise<PreparedDirectory | undefined> {
    return prepareDirectory(this, path, metadata, pending);
  }

  /** Creates prepared directories and their metadata in a fixed number of statements. */
  createDirectories(list: PreparedDirectory[]): Promise<void> {
    return createDirectories(this, list);
  }

  chmod(dir: DirRow, mode: number): Promise<void> {
    return chmod(this, dir, mode);
  }

  removeDirectory(path: string, recursive: boolean): Promise<{ directories: number; files: number }> {
    return removeDirectory(this, path, recursive);
  }

  /** Sets (or with null removes) directory metadata; a field may be set once along a path. */
  setDirectoryMetadata(dir: DirRow, metadata: Record<string, unknown>): Promise<void> {
    return setDirectoryMetadata(this, dir, metadata);
  }

  /** Registers files, creating missing parent directories; all-or-nothing with the transaction. */
  registerFiles(items: NewFile[]): Promise<void> {
    return registerFiles(this, items);
  }

  /** Sets (or with null removes) file metadata; returns the file's new `meta` column. */
  setFileMetadata(dir: DirRow, file: FileRow, metadata: Record<string, unknown>): Promise<string | null> {
    return setFileMetadata(this, dir, file, metadata);
  }

  removeFile(path: string): Promise<void> {
    return removeFile(this, path);
  }
}
