/**
 * What this machine offers jobs, measured: its cores, memory and platform. The defaults of a local site's
 * description and of `dirigo agent --cores --memory --platform` (docs/matching.md).
 */
import { arch, availableParallelism, platform as osPlatform, totalmem } from 'node:os';

/** Node's architecture names in DIRAC's spelling (`Linux_x86_64_glibc-2.36`). */
const ARCHITECTURES: Readonly<Record<string, string>> = { x64: 'x86_64', arm64: 'aarch64', ia32: 'i686', ppc64: 'ppc64le', s390x: 's390x', riscv64: 'riscv64' };

/**
 * DIRAC's platform name of this machine, `Linux_x86_64_glibc-2.36`; null where it has no glibc (musl,
 * another OS), so that only jobs naming no platform run here.
 */
export function measuredPlatform(): string | null {
  if (osPlatform() !== 'linux') return null;
  const header = (process.report.getReport() as { header?: { glibcVersionRuntime?: string } }).header;
  const glibc = header?.glibcVersionRuntime;
  if (!glibc || !/^\d+\.\d+/.test(glibc)) return null;
  const [major, minor] = glibc.split('.');
  return `Linux_${ARCHITECTURES[arch()] ?? arch()}_glibc-${major}.${minor}`;
}

/** This machine's processors and memory (MB). */
export function measuredCapacity(): { cores: number; memoryMb: number } {
  return { cores: availableParallelism(), memoryMb: Math.floor(totalmem() / (1024 * 1024)) };
}

/** What a job takes of the resource running it: the processors it was given, the memory and GPUs it asked for. */
export interface Take {
  cores: number;
  memoryMb: number;
  gpus: number;
}
