/**
 * The database as Kysely sees it. Each domain declares its own tables next to its store and adds them
 * here by declaration merging (`declare module '../kernel/db/schema.ts' { interface Database extends
 * JobsTables {} }`), so the kernel names no domain. Times are ISO 8601 UTC text on both dialects.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- completed by the domains
export interface Database {}
