/** The dimensions usage is grouped and filtered by, in the order grouping sets name them. */
export const DIMENSIONS = ['owner', 'owner_group', 'site', 'job_type', 'status'] as const;
export type Dimension = (typeof DIMENSIONS)[number];
