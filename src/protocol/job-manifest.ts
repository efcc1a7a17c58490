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
  Environment?: Record<string, string>;
  [key: string]: unknown;
}
