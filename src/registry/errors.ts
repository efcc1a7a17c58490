/** The registry's errors, each with a stable code (kernel DirigoError: 4xx JSON naming the problem). */
import { DirigoError } from '../kernel/errors.ts';

/** 409: the entry comes from config.yaml; change it there (status and new members are still allowed). */
export class ManagedByConfig extends DirigoError {
  constructor(what: string) {
    super('managed_by_config', 409, `${what} is managed by config.yaml: change it there`);
  }
}

/** 409: a group that still has members is removed only with force. */
export class GroupNotEmpty extends DirigoError {
  constructor(group: string, members: number) {
    super('group_not_empty', 409, `group '${group}' has ${members} member(s): remove them first, or force`);
  }
}
