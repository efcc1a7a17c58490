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
  [key: string]: unknown;
}
