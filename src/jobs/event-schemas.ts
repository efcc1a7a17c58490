/**
 * The data of the `status` and `parameter` events of GET /jobs/events (events.ts writes them). A
 * text/event-stream body has no per-event schema in OpenAPI 3.1, so the composition root publishes these
 * under components.schemas, and packages/client's generated types carry them to the CLI and the web
 * application.
 */
import { Type } from 'typebox';

export const JobStatusEvent = Type.Object(
  {
    JobID: Type.Integer(),
    Status: Type.String(),
    MinorStatus: Type.String(),
    ApplicationStatus: Type.String(),
    /** When the status changed (ISO 8601, UTC). */
    Time: Type.String(),
    /** Who changed it: the scheduler, an executor, an agent, the job itself (`Job`) or a user. */
    Source: Type.String(),
  },
  { description: 'The data of an `event: status` of GET /jobs/events: one entry of the job\'s status history' },
);

export const JobParameterEvent = Type.Object(
  {
    JobID: Type.Integer(),
    Name: Type.String(),
    Value: Type.String(),
    Time: Type.String(),
  },
  { description: 'The data of an `event: parameter` of GET /jobs/events: a parameter the running job reported' },
);
