/**
 * Issue 38, SCIM filters (src/registry/scim/filter.ts) against RFC 7644 §3.4.2.2: every example filter of
 * that section parses and selects what the RFC says it selects, over users described by the RFC 7643 User
 * and enterprise schemas as SCIMMY (an implementation nobody on the team wrote) defines them; where
 * SCIMMY's own filter evaluates a filter, it selects the same users. Bad filters are invalidFilter.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import SCIMMY from 'scimmy';
import { matches, parseFilter } from '../../src/registry/scim/filter.ts';
import { InvalidFilter } from '../../src/registry/scim/errors.ts';
import { COMMON_ATTRIBUTES, type AttributeDefinition, type ResourceAttributes } from '../../src/registry/scim/schema-definitions.ts';

const CORE = 'urn:ietf:params:scim:schemas:core:2.0:User';
const ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';

/** SCIMMY's attributes in their RFC 7643 §7 JSON form. */
const rfcForm = (definition: { describe(): { attributes: unknown[] } }) => JSON.parse(JSON.stringify(definition.describe().attributes)) as AttributeDefinition[];

/** The RFC 7643 §4.1 User schema and §4.3 enterprise extension, as SCIMMY describes them. */
const RFC_USER: ResourceAttributes = {
  core: CORE,
  extension: ENTERPRISE,
  attributes: [...COMMON_ATTRIBUTES, ...rfcForm(SCIMMY.Schemas.User.definition)],
  extensionAttributes: rfcForm(SCIMMY.Schemas.EnterpriseUser.definition),
};

// Three users written for these examples (RFC 7643 §8.2 style).
const USERS = [
  {
    schemas: [CORE, ENTERPRISE],
    id: '2819c223',
    userName: 'bjensen',
    name: { formatted: 'Ms. Barbara J Jensen III', familyName: 'Jensen', givenName: 'Barbara' },
    title: 'Tour Guide',
    userType: 'Employee',
    emails: [{ value: 'bjensen@example.com', type: 'work', primary: true }, { value: 'babs@jensen.org', type: 'home' }],
    ims: [{ value: 'someaimhandle', type: 'aim' }],
    [ENTERPRISE]: { employeeNumber: '701984', manager: { value: '26118915', displayName: 'John Smith' } },
    meta: { resourceType: 'User', created: '2010-01-23T04:56:22Z', lastModified: '2011-05-13T04:42:34Z' },
  },
  {
    schemas: [CORE],
    id: '9a1c7b40',
    userName: 'Jomalley',
    name: { familyName: "O'Malley", givenName: 'Jo' },
    userType: 'Intern',
    emails: [{ value: 'jo@example.org', type: 'work' }],
    ims: [{ value: 'jo@foo.com', type: 'xmpp' }],
    meta: { resourceType: 'User', created: '2011-01-01T00:00:00Z', lastModified: '2011-05-13T04:42:35Z' },
  },
  {
    schemas: [CORE],
    id: '5d48a0a8',
    userName: 'jsmith',
    name: { familyName: 'Smith' },
    title: 'Manager',
    userType: 'Contractor',
    emails: [{ value: 'js@example.net', type: 'work' }],
    ims: [{ value: 'jsmith', type: 'aim' }],
    meta: { resourceType: 'User', created: '2009-01-01T00:00:00Z', lastModified: '2010-01-01T00:00:00Z' },
  },
];

const select = (filter: string) => {
  const parsed = parseFilter(filter, RFC_USER);
  return USERS.filter((u) => matches(u, parsed)).map((u) => u.userName);
};

/** RFC 7644 §3.4.2.2's example filters, with the users each selects here. `scimmy`: SCIMMY's own filter agrees. */
const EXAMPLES: { filter: string; expected: string[]; scimmy?: boolean }[] = [
  { filter: 'userName eq "bjensen"', expected: ['bjensen'], scimmy: true },
  { filter: 'userName Eq "BJensen"', expected: ['bjensen'] },
  { filter: `name.familyName co "O'Malley"`, expected: ['Jomalley'], scimmy: true },
  { filter: 'userName sw "J"', expected: ['Jomalley', 'jsmith'] },
  { filter: 'urn:ietf:params:scim:schemas:core:2.0:User:userName sw "J"', expected: ['Jomalley', 'jsmith'] },
  { filter: 'title pr', expected: ['bjensen', 'jsmith'], scimmy: true },
  { filter: 'meta.lastModified gt "2011-05-13T04:42:34Z"', expected: ['Jomalley'], scimmy: true },
  { filter: 'meta.lastModified ge "2011-05-13T04:42:34Z"', expected: ['bjensen', 'Jomalley'], scimmy: true },
  { filter: 'meta.lastModified lt "2011-05-13T04:42:34Z"', expected: ['jsmith'], scimmy: true },
  { filter: 'meta.lastModified le "2011-05-13T04:42:34Z"', expected: ['bjensen', 'jsmith'], scimmy: true },
  { filter: 'title pr and userType eq "Employee"', expected: ['bjensen'], scimmy: true },
  { filter: 'title pr or userType eq "Intern"', expected: ['bjensen', 'Jomalley', 'jsmith'], scimmy: true },
  { filter: `schemas eq "${ENTERPRISE}"`, expected: ['bjensen'] },
  { filter: 'userType eq "Employee" and (emails co "example.com" or emails.value co "example.org")', expected: ['bjensen'] },
  { filter: 'userType ne "Employee" and not (emails co "example.com" or emails.value co "example.org")', expected: ['jsmith'] },
  { filter: 'userType eq "Employee" and (emails.type eq "work")', expected: ['bjensen'], scimmy: true },
  { filter: 'userType eq "Employee" and emails[type eq "work" and value co "@example.com"]', expected: ['bjensen'], scimmy: true },
  { filter: 'emails[type eq "work" and value co "@example.com"] or ims[type eq "xmpp" and value co "@foo.com"]', expected: ['bjensen', 'Jomalley'], scimmy: true },
];

describe('SCIM filters: the examples of RFC 7644 §3.4.2.2', () => {
  for (const { filter, expected, scimmy } of EXAMPLES) {
    it(filter, () => {
      assert.deepEqual(select(filter), expected);
      if (scimmy) assert.deepEqual(new SCIMMY.Types.Filter(filter).match(USERS).map((u: { userName: string }) => u.userName), expected, 'SCIMMY selects the same users');
    });
  }

  it('extension attributes by their URN, sub-attributes of extension attributes, case-insensitive names', () => {
    assert.deepEqual(select(`${ENTERPRISE}:employeeNumber eq "701984"`), ['bjensen']);
    assert.deepEqual(select(`${ENTERPRISE}:manager.displayName sw "john"`), ['bjensen']);
    assert.deepEqual(select('USERNAME EQ "jsmith"'), ['jsmith']);
    assert.deepEqual(select('Emails.Value ew ".NET"'), ['jsmith']);
  });

  it('precedence: not and parentheses, then and, then or', () => {
    assert.deepEqual(select('userName eq "jsmith" or userName eq "bjensen" and title pr'), ['bjensen', 'jsmith']);
    assert.deepEqual(select('(userName eq "Jomalley" or userName eq "bjensen") and title pr'), ['bjensen']);
    assert.deepEqual(select('not (title pr) and userType eq "Intern"'), ['Jomalley']);
  });

  it('case-exact attributes compare exactly; dates compare as instants; null and pr', () => {
    assert.deepEqual(select('id eq "2819C223"'), []);
    assert.deepEqual(select('id eq "2819c223"'), ['bjensen']);
    assert.deepEqual(select('meta.created gt "2010-01-23T05:56:22+01:00"'), ['Jomalley']);
    assert.deepEqual(select('title eq null'), ['Jomalley']);
    assert.deepEqual(select('active eq true'), []);
    assert.deepEqual(select('not (userName gt "c")'), ['bjensen']);
  });

  const INVALID = [
    '',
    'userName eq',
    'userName xx "a"',
    '(userName eq "a"',
    'userName eq "a")',
    'userName eq "a" and',
    'userName eq bjensen',
    'userName eq "unterminated',
    'nosuch eq "a"',
    'name.nosuch eq "a"',
    'name co "x"',
    'active gt true',
    'active eq "true"',
    'meta.lastModified gt "yesterday"',
    'userName[value eq "x"]',
    'emails[type eq "work"',
    'emails[nosuch eq "work"]',
    'userName pr pr',
    'not userName pr',
  ];
  for (const filter of INVALID) {
    it(`refuses ${JSON.stringify(filter)} as invalidFilter`, () => {
      assert.throws(() => parseFilter(filter, RFC_USER), (err: unknown) => err instanceof InvalidFilter && err.scimType === 'invalidFilter' && err.status === 400 && err.message.length > 0);
    });
  }
});
