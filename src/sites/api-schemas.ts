/** The /sites answers and requests: every site's status and resources, its history, a ban and an unban. */
import { Type } from 'typebox';

const SITE_NAME = '^[A-Za-z0-9_.-]{1,64}$';
/** A partition, an agent's resource name (its node by default): no spaces or slashes, so it reads in a URL and a log line. */
export const RESOURCE_NAME = '^[A-Za-z0-9][A-Za-z0-9_.:@+-]{0,127}$';

export const SiteParams = Type.Object({ site: Type.String({ pattern: SITE_NAME, description: 'a site of the configuration (jobs.sites)' }) });

const Resource = Type.String({ pattern: RESOURCE_NAME, description: 'one resource of the site (a Slurm partition, an agents resource name); absent for the whole site' });
const Reason = Type.String({ minLength: 1, maxLength: 1000, pattern: '\\S', description: 'why, in words others will read in the status and its history' });

export const BanBody = Type.Object({ reason: Reason, resource: Type.Optional(Resource) }, { additionalProperties: false });
export const UnbanBody = Type.Object({ reason: Type.Optional(Reason), resource: Type.Optional(Resource) }, { additionalProperties: false });

export const HistoryQuery = Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, description: 'at most this many changes, newest first (default 100)' })) });

const When = Type.String({ description: 'ISO 8601, UTC' });

export const StatusChange = Type.Object(
  {
    site: Type.String(),
    resource: Type.String({ description: "the resource, '' for the whole site" }),
    status: Type.Union([Type.Literal('Banned'), Type.Literal('Active')]),
    reason: Type.String({ description: "why ('' when an unban gave none)" }),
    by: Type.String({ description: 'who: the user name of the administrator' }),
    at: When,
  },
  { additionalProperties: false },
);

export const SiteHistory = Type.Object({ site: Type.String(), history: Type.Array(StatusChange, { description: 'newest first' }) }, { additionalProperties: false });

const BanFacts = {
  reason: Type.String(),
  by: Type.String({ description: 'who banned it' }),
  since: When,
};

const ResourceDescription = Type.Object(
  {
    site: Type.String(),
    resource: Type.String({ description: "'' for a site that is one resource" }),
    kind: Type.Union([Type.Literal('local'), Type.Literal('slurm'), Type.Literal('agents')]),
    cores: Type.Number({ description: 'processors one job may get' }),
    memoryMb: Type.Number({ description: 'memory one job may get, MB' }),
    gpus: Type.Number(),
    tags: Type.Array(Type.String()),
    platform: Type.Union([Type.String(), Type.Null()]),
    cpuTime: Type.Union([Type.Number(), Type.Null()], { description: 'the longest a job may run, seconds; null for no limit' }),
    seenAt: Type.String({ description: 'when it last described itself, ISO 8601' }),
  },
  { additionalProperties: false },
);

export const Site = Type.Object(
  {
    name: Type.String(),
    type: Type.String({ description: 'local, slurm or agents' }),
    status: Type.Union([Type.Literal('Active'), Type.Literal('Banned')], { description: 'Banned: the site gets no new jobs' }),
    ban: Type.Union([Type.Object(BanFacts, { additionalProperties: false }), Type.Null()], { description: "the site's own ban; null when it is not banned" }),
    bannedResources: Type.Array(Type.Object({ resource: Type.String(), ...BanFacts }, { additionalProperties: false }), { description: 'resources banned one by one (they get no new jobs)' }),
    resources: Type.Array(ResourceDescription, { description: 'its resources as they last described themselves' }),
  },
  { additionalProperties: false },
);

export const SiteList = Type.Object({ sites: Type.Array(Site, { description: 'every configured site, in configuration order' }) }, { additionalProperties: false });
