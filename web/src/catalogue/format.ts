/** How the catalogue shows sizes and permission bits. */
const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];

export function formatSize(bytes: number): string {
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${bytes} B` : `${value.toFixed(1)} ${UNITS[unit]}`;
}

/** 0o755 → `rwxr-xr-x` (with a leading `d` for directories). */
export function modeText(mode: number, directory = false): string {
  const bits = 'rwxrwxrwx';
  let text = '';
  for (let i = 0; i < 9; i++) text += mode & (1 << (8 - i)) ? bits[i] : '-';
  return (directory ? 'd' : '-') + text;
}
