/**
 * Whether a real Slurm answers on this machine (`scripts/slurm-dev.sh` brings one up). Without it the Slurm
 * suite is skipped with a visible message; with DIRIGO_REQUIRE_SLURM=1 (CI) it fails instead.
 */
import { execFileSync } from 'node:child_process';

let probe: string | undefined | null = null;

/** undefined when Slurm is usable, else why not. */
export function slurmUnavailable(): string | undefined {
  if (probe !== null) return probe;
  try {
    const ping = execFileSync('scontrol', ['ping'], { encoding: 'utf8', timeout: 15000, stdio: ['ignore', 'pipe', 'pipe'] });
    if (!/is UP/.test(ping)) throw new Error(`scontrol ping: ${ping.trim()}`);
    const nodes = execFileSync('sinfo', ['-h', '-o', '%T'], { encoding: 'utf8', timeout: 15000 }).trim().split('\n');
    if (!nodes.some((s) => /^(idle|mixed|allocated|completing)/.test(s))) throw new Error(`no usable node (sinfo: ${nodes.join(', ')})`);
    probe = undefined;
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: string; stdout?: string };
    probe = e.code === 'ENOENT' ? 'Slurm is not installed (no scontrol)' : (e.stderr?.toString().trim() || e.stdout?.toString().trim() || e.message).split('\n')[0];
  }
  if (probe !== undefined) {
    if (process.env.DIRIGO_REQUIRE_SLURM === '1') throw new Error(`DIRIGO_REQUIRE_SLURM=1 but Slurm is unavailable: ${probe}. Run scripts/slurm-dev.sh first.`);
    process.stderr.write(`\n*** Slurm suite SKIPPED: ${probe}. Run scripts/slurm-dev.sh (root) to bring up a single-node Slurm. ***\n\n`);
  }
  return probe;
}
