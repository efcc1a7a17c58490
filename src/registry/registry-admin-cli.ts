/**
 * `dirigo admin user|group|audit`: the registry's administration on the service's database, beside or
 * without a running server (instances see the change within registry.refreshMs). Changes go through
 * RegistryAdmin, audited with actor `cli:<os user>`.
 */
import { userInfo } from 'node:os';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { OpenServiceDatabase } from '../kernel/service-database.ts';
import { DirigoError } from '../kernel/errors.ts';
import { CliError, EXIT } from '../terminal/output.ts';
import { nearestDataDir } from '../terminal/data-dir.ts';
import { unknownWord } from '../terminal/suggest.ts';
import { RegistryAdmin } from './admin.ts';
import { Registry } from './registry.ts';
import { groupView, userView } from './routes/views.ts';
import { seedRegistry } from './seed.ts';

const USAGE = `usage: dirigo admin user list [--status S] [--group G] [--json]
       dirigo admin user show|suspend|reinstate|remove <name> [--reason TEXT] [--json]
       dirigo admin user add|modify <name> [--email E] [--display-name N] [--dn DN]... [--expires-at ISO]
                                   [--default-group G] [--json]
       dirigo admin group list [--json]
       dirigo admin group show|remove <name> [--force] [--json]
       dirigo admin group add|modify <name> [--property P]... [--share N] [--description TEXT] [--json]
       dirigo admin group member-add <group> <user> [--manager] [--ends-at ISO]
       dirigo admin group member-remove <group> <user>
       dirigo admin audit [--target T] [--actor A] [--action A] [--since ISO] [--limit N] [--json]
common options: [--data-dir DIR] (default: dirigo-data here or in the nearest folder above) [--config FILE]

Entries from config.yaml (managedBy config) change only there; they may be suspended and get members.
Every change is in the audit log (actor cli:<your user name>).

examples:
  dirigo admin user add dave --email dave@example.org --dn "/O=Example/CN=Dave"
  dirigo admin group member-add lhcb_user dave
  dirigo admin user suspend dave --reason "left the experiment"
  dirigo admin audit --target dave
`;

const USER_ACTIONS = ['list', 'show', 'add', 'modify', 'suspend', 'reinstate', 'remove'];
const GROUP_ACTIONS = ['list', 'show', 'add', 'modify', 'remove', 'member-add', 'member-remove'];

/** `print`: where answers go (standard output; tests collect them). */
export async function registryAdminCommand(area: 'user' | 'group' | 'audit', argv: string[], openServiceDatabase: OpenServiceDatabase, print: (text: string) => void = (t) => void process.stdout.write(t)): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      'data-dir': { type: 'string', default: nearestDataDir('config.yaml') },
      config: { type: 'string' },
      json: { type: 'boolean' },
      status: { type: 'string' },
      group: { type: 'string' },
      email: { type: 'string' },
      'display-name': { type: 'string' },
      dn: { type: 'string', multiple: true },
      'expires-at': { type: 'string' },
      'default-group': { type: 'string' },
      reason: { type: 'string' },
      property: { type: 'string', multiple: true },
      share: { type: 'string' },
      description: { type: 'string' },
      force: { type: 'boolean' },
      manager: { type: 'boolean' },
      'ends-at': { type: 'string' },
      target: { type: 'string' },
      actor: { type: 'string' },
      action: { type: 'string' },
      since: { type: 'string' },
      limit: { type: 'string', default: '50' },
      help: { type: 'boolean', short: 'h' },
    },
    allowPositionals: true,
    strict: true,
  });
  const [action, ...args] = area === 'audit' ? ['audit', ...positionals] : positionals;
  if (values.help || !action) {
    print(USAGE);
    return values.help ? 0 : 2;
  }
  const allowed = area === 'user' ? USER_ACTIONS : area === 'group' ? GROUP_ACTIONS : ['audit'];
  if (!allowed.includes(action)) throw new CliError(`${unknownWord(`${area} command`, action, allowed)}\n\n${USAGE}`, 2);
  const needs = action === 'list' || action === 'audit' ? 0 : action.startsWith('member-') ? 2 : 1;
  if (args.length !== needs) throw new CliError(`${area} ${action} takes ${needs} name(s)\n\n${USAGE}`, 2);
  const share = values.share === undefined ? undefined : Number(values.share);
  if (share !== undefined && !(share > 0)) throw new CliError(`--share must be a number above 0, not '${values.share}'`, 2);

  const { config, db, close } = await openServiceDatabase({ 'data-dir': resolve(values['data-dir']), config: values.config });
  try {
    // The file's entries are there even before the server first started.
    await seedRegistry(db, config.registry);
    const registry = await Registry.load(db, config);
    const admin = new RegistryAdmin(db, registry);
    const actor = `cli:${userInfo().username}`;
    const out = (value: unknown, text: string) => print(values.json ? `${JSON.stringify(value, null, 2)}\n` : `${text}\n`);
    const showUser = (name: string) => {
      const u = registry.user(name);
      if (!u) throw new CliError(`no user '${name}'`, EXIT.notFound);
      const v = userView(registry, u);
      out(v, `${v.name}\t${v.barred ?? v.status}\t${v.managedBy}\t${v.email ?? '-'}\n  groups: ${v.groups.join(' ') || '-'}\n  DNs: ${v.dns.join(' | ') || '-'}`);
    };
    const showGroup = (name: string) => {
      const g = registry.group(name);
      if (!g) throw new CliError(`no group '${name}'`, EXIT.notFound);
      const v = groupView(g, true);
      out(v, `${v.name}\t${v.managedBy}\tshare ${v.share ?? '-'}\tproperties: ${v.properties.join(' ') || '-'}\n  members: ${(v.members ?? []).map((m) => (m.role === 'manager' ? `${m.user}(manager)` : m.user)).join(' ') || '-'}`);
    };
    const [name, user] = args as [string, string];
    if (area === 'audit') {
      const { entries } = await admin.audit({ target: values.target, actor: values.actor, action: values.action, since: values.since, limit: Number(values.limit) || 50 });
      out(entries, entries.map((e) => `${e.at}\t${e.actor}\t${e.action}\t${e.target}`).join('\n') || 'no entries');
      return 0;
    }
    if (area === 'user') {
      if (action === 'list') {
        const users = registry.users().filter((u) => (values.status === undefined || u.status === values.status) && (values.group === undefined || u.groups.includes(values.group)));
        out(users.map((u) => userView(registry, u)), users.map((u) => `${u.name}\t${registry.barred(u.name) ?? u.status}\t${u.managedBy}\t${u.groups.join(',') || '-'}`).join('\n') || 'no users');
        return 0;
      }
      const fields = { email: values.email, displayName: values['display-name'], dns: values.dn, expiresAt: values['expires-at'] };
      if (action === 'add') await admin.createUser(actor, { name, ...fields });
      if (action === 'modify') await admin.updateUser(actor, name, { ...fields, defaultGroup: values['default-group'] });
      if (action === 'suspend') await admin.setUserStatus(actor, name, 'suspended', values.reason);
      if (action === 'reinstate') await admin.setUserStatus(actor, name, 'active');
      if (action === 'remove') await admin.removeUser(actor, name);
      showUser(name);
      return 0;
    }
    if (action === 'list') {
      out(registry.groups().map((g) => groupView(g, true)), registry.groups().map((g) => `${g.name}\t${g.managedBy}\t${g.members.length} members\t${g.properties.join(' ') || '-'}`).join('\n') || 'no groups');
      return 0;
    }
    if (action === 'add') await admin.createGroup(actor, { name, properties: values.property, share, description: values.description });
    if (action === 'modify') await admin.updateGroup(actor, name, { properties: values.property, share, description: values.description });
    if (action === 'member-add') await admin.addMember(actor, name, user, { role: values.manager ? 'manager' : 'member', endsAt: values['ends-at'] });
    if (action === 'member-remove') await admin.removeMember(actor, name, user);
    if (action === 'remove') {
      await admin.removeGroup(actor, name, { force: values.force ?? false });
      out({ removed: name }, `removed group ${name}`);
      return 0;
    }
    showGroup(name);
    return 0;
  } catch (err) {
    if (err instanceof DirigoError) throw new CliError(`${err.code}: ${err.message}`, err.status === 404 ? EXIT.notFound : EXIT.usage);
    throw err;
  } finally {
    await close();
  }
}
