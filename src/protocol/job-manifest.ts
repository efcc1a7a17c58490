/**
 * A job manifest as the API takes it (POST /jobs, README "Jobs"), in the shape the server stores and an
 * executor (the service's or a worker node's agent) runs. Its checks are the jobs domain's (manifest.ts).
 */
export interface Manifest {
  Executable: string;
  Arguments?: string;
  Sites?: string[];
  JobName?: string;
  JobGroup?: string;
  JobType?: string;
  InputSandbox?: string[];
  /** `sha256:<hex>`: an input sandbox uploaded before (POST /sandboxes, docs/sandboxes.md); InputSandbox names its files. */
  InputSandboxRef?: string;
  OutputSandbox?: string[];
  StdOutput?: string;
  StdError?: string;
  Priority?: number;
  CPUTime?: number;
  NumberOfProcessors?: number;
  MinNumberOfProcessors?: number;
  MaxNumberOfProcessors?: number;
  /** MB. */
  MaxRAM?: number;
  NumberOfGPUs?: number;
  /** One string or a list (JDL lists arrive as arrays). */
  Tags?: string | string[];
  Platform?: string | string[];
  BannedSites?: string | string[];
  Environment?: Record<string, string>;
  // Workflows (docs/workflows.md).
  /** Job ids, node names (POST /workflows) or Slurm's `afterok:12:13`. */
  DependsOn?: number | string | (number | string)[];
  DependencyType?: 'afterok' | 'afterany' | 'afternotok';
  NodeName?: string;
  Hold?: boolean;
  OnExitHold?: number[];
  MaxRetries?: number;
  RetryExitCodes?: number[];
  SuccessExitCodes?: number[];
  /** Seconds before the first retry; doubles with each. */
  RetryDelay?: number;
  BanFailedSites?: boolean;
  MaxRunning?: number;
  [key: string]: unknown;
}
