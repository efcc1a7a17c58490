/** Directory counters (files and bytes, direct and in the whole subtree) along a path. */
import type { Session } from './session.ts';
import { ancestorsOf } from '../../protocol/catalogue-paths.ts';

export async function bumpChain(s: Session, dirPath: string, directId: number | undefined, files: number, size: number): Promise<void> {
  const chain = [...ancestorsOf(dirPath), dirPath];
  await s.load(chain);
  for (const p of chain) {
    const id = s.dirs.get(p)!.id;
    const direct = id === directId;
    await s.trx
      .updateTable('cat_directories')
      .set((eb) => ({
        ...(direct ? { files: eb('files', '+', files), size: eb('size', '+', size) } : {}),
        tree_files: eb('tree_files', '+', files),
        tree_size: eb('tree_size', '+', size),
      }))
      .where('id', '=', id)
      .execute();
  }
}
