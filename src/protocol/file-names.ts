/** Sandbox file names: single path components only, because a name is never trusted as a path. */

/** C0 controls and DEL. */
function hasControl(name: string): boolean {
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return true;
  }
  return false;
}

/** Why `name` is not an acceptable sandbox file name, or undefined when it is. */
export function fileNameProblem(name: string): string | undefined {
  if (name.length === 0) return 'is empty';
  if (Buffer.byteLength(name) > 255) return 'is longer than 255 bytes';
  if (name.includes('/') || name.includes('\\')) return 'contains a path separator';
  if (name === '.' || name === '..' || name.includes('..')) return "contains '..'";
  if (hasControl(name)) return 'contains a control character';
  return undefined;
}
