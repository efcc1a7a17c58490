/** Shapes of the /workflows bodies and answers (docs/workflows.md "Workflows"). */
import { Type } from 'typebox';
import type { JobsConfig } from '../config-schema.ts';
import { JobManifest } from '../api-schemas.ts';

const Counts = Type.Record(Type.String(), Type.Integer({ minimum: 0 }), { description: 'Status → how many of its jobs have it' });
const MaxRunning = Type.Integer({ minimum: 1, maximum: 2147483647, description: "how many of its jobs may be Waiting, Matched or Running at once (Slurm's %N)" });
const WorkflowName = Type.String({ minLength: 1, maxLength: 256 });

/** POST /workflows bodies. JSON first: generators make the first media type the method's main form. */
export const workflowBodies = (config: JobsConfig) => ({
  'application/json': Type.Object(
    {
      Name: Type.Optional(WorkflowName),
      MaxRunning: Type.Optional(MaxRunning),
      Jobs: Type.Array(JobManifest, {
        minItems: 1,
        maxItems: config.maxBulk,
        description: `the nodes: each a manifest named by NodeName (else JobName), DependsOn naming other nodes or job ids; at most jobs.maxBulk (${config.maxBulk})`,
      }),
    },
    { additionalProperties: false, title: 'WorkflowSubmission' },
  ),
  'multipart/form-data': Type.Object(
    {
      workflow: Type.Optional(Type.String({ contentMediaType: 'application/json', description: 'JSON { Name, MaxRunning }' })),
      manifest: Type.Optional(Type.Array(Type.String({ contentMediaType: 'application/json', description: 'a node (JSON manifest), one per part' }), { maxItems: config.maxBulk })),
      jdl: Type.Optional(Type.Array(Type.String({ contentMediaType: 'text/x-jdl', description: 'a node as JDL, named by NodeName or JobName, one per part' }), { maxItems: config.maxBulk })),
      files: Type.Optional(Type.Array(Type.Unsafe<Uint8Array>({ type: 'string', contentMediaType: 'application/octet-stream' }), { maxItems: config.sandbox.maxFiles, description: 'input sandbox files shared by every node' })),
    },
    { description: "one node per 'manifest' or 'jdl' part; every file part joins the input sandbox of them all" },
  ),
});

export const WorkflowSubmitted = Type.Object(
  {
    WorkflowID: Type.Integer(),
    JobIDs: Type.Array(Type.Integer()),
    Nodes: Type.Record(Type.String(), Type.Array(Type.Integer()), { description: "each node's job ids" }),
  },
  { title: 'WorkflowSubmitted' },
);

const summaryFields = {
  WorkflowID: Type.Integer(),
  Name: Type.String(),
  Kind: Type.String({ description: 'workflow (POST /workflows) or parametric (POST /jobs with MaxRunning)' }),
  Owner: Type.String(),
  OwnerGroup: Type.String(),
  MaxRunning: Type.Unsafe<number | null>({ type: ['integer', 'null'] }),
  SubmissionTime: Type.String(),
  Jobs: Type.Integer({ description: 'how many jobs it has' }),
  Counts,
  Status: Type.String({ description: 'Active while a job has not ended; then Done (all Done), Failed (one Failed), else Killed; Deleted jobs left out (Deleted when all are)' }),
};

export const WorkflowSummary = Type.Object(summaryFields, { title: 'WorkflowSummary' });

export const WorkflowList = Type.Object({ Workflows: Type.Array(WorkflowSummary) }, { title: 'WorkflowList' });

export const WorkflowDescription = Type.Object(
  {
    ...summaryFields,
    Nodes: Type.Array(
      Type.Object({
        Name: Type.String(),
        DependsOn: Type.Array(Type.String(), { description: 'the nodes it depends on' }),
        DependencyType: Type.String(),
        JobIDs: Type.Array(Type.Integer()),
        Counts,
      }),
    ),
    Jobs: Type.Array(
      Type.Object({
        JobID: Type.Integer(),
        Node: Type.Unsafe<string | null>({ type: ['string', 'null'] }),
        Status: Type.String(),
        MinorStatus: Type.String(),
        HoldReason: Type.String(),
        RetryCounter: Type.Integer(),
        Parents: Type.Array(Type.Integer()),
      }),
    ),
  },
  { title: 'WorkflowDescription' },
);

export const WidParams = Type.Object({ wid: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'a workflow id (a positive integer)' }) });

export const WorkflowListQuery = Type.Object(
  {
    owner: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: "only this owner's workflows (others' need JobAdministrator, JobMonitor, or JobSharing in their group)" })),
    maxItems: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
  },
  { additionalProperties: false },
);
