/**
 * The response validator every test service runs (test/helpers/response-validator.ts) catches answers the
 * document does not describe — an undocumented status, a body that does not match its schema (even one
 * the serializer would coerce or fail on), a media type the operation does not answer with, a response
 * schema that drops part of the answer — flags them on the answer without changing it, and passes
 * documented answers, 5xx, hidden routes and unknown URLs.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import Fastify, { type FastifyReply } from 'fastify';
import { Type } from 'typebox';
import { responseValidator, VIOLATION_HEADER } from '../helpers/response-validator.ts';
import { Binary, errors } from '../../src/kernel/openapi.ts';

const Thing = Type.Object({ name: Type.String(), size: Type.Integer() });
const response = { 200: Thing, ...errors(404) };
const archive = { responses: { 200: { description: 'an archive', content: { 'application/gzip': Binary } } } };

describe('the response validator of the test services', () => {
  it('checks status, media type and body against a route schema', () => {
    const { check } = responseValidator();
    assert.deepEqual(check({ response }, 200, 'application/json; charset=utf-8', '{"name":"x","size":1}'), []);
    assert.match(check({ response }, 409, 'application/json', '{}')[0]!, /status 409 is not documented/);
    assert.match(check({ response }, 200, 'application/json', '{"name":"x"}')[0]!, /must have required property 'size'/);
    assert.match(check({ response }, 404, 'application/json', '{"error":3}')[0]!, /body\/error must be string/);
    assert.match(check({ response }, 200, 'text/html', '<p>')[0]!, /answered text\/html, documented: application\/json/);
    assert.deepEqual(check({ response }, 503, 'text/plain', 'down'), [], 'every operation answers 5XX');
    assert.deepEqual(check({ response: { '4xx': Thing } }, 418, 'application/json', '{"name":"x","size":1}'), [], 'a range');
    assert.deepEqual(check({ documented: archive }, 200, 'application/gzip', Buffer.from([0x1f, 0x8b])), []);
    assert.match(check({ documented: { responses: { 303: { description: 'a redirect' } } } }, 303, 'text/plain', 'see')[0]!, /documented without a body/);
  });

  it('flags what a served route answers, before and after serialization, without changing the answer', async () => {
    const { plugin, violations } = responseValidator();
    const app = Fastify();
    await app.register(plugin);
    app.get('/good', { schema: { response } }, async () => ({ name: 'x', size: 1 }));
    app.get('/bad-status', { schema: { response } }, async (_q, reply) => (reply as FastifyReply).code(409).send({ error: 'conflict', error_description: 'no' }));
    // fast-json-stringify would send "size":1 — the handler's answer is wrong all the same.
    app.get('/coerced', { schema: { response } }, async () => ({ name: 'x', size: '1' }));
    // fast-json-stringify fails on a missing required property: a 500, with the cause named.
    app.get('/incomplete', { schema: { response } }, async () => ({ name: 'x' }));
    app.get('/lossy', { schema: { response } }, async () => ({ name: 'x', size: 1, owner: 'alice' }));
    app.get('/archive', { schema: { response: errors(404), documented: archive } }, async (_q, reply) => reply.type('application/gzip').send(Buffer.from([0x1f, 0x8b])));
    app.get('/wrong-type', { schema: { response: errors(404), documented: archive } }, async (_q, reply) => reply.type('text/plain').send('hello'));
    app.get('/hidden', { schema: { hide: true } }, async () => 'anything');
    const answers = new Map<string, Awaited<ReturnType<typeof app.inject>>>();
    for (const url of ['/good', '/bad-status', '/coerced', '/incomplete', '/lossy', '/archive', '/wrong-type', '/hidden', '/missing']) answers.set(url, await app.inject({ url }));
    await app.close();

    const byUrl = Object.fromEntries(violations.map((v) => [v.url, v]));
    assert.deepEqual(Object.keys(byUrl).sort(), ['/bad-status', '/coerced', '/incomplete', '/lossy', '/wrong-type']);
    assert.equal(violations.length, 5, 'one violation each');
    assert.match(byUrl['/bad-status']!.problem, /status 409 is not documented/);
    assert.equal(byUrl['/bad-status']!.route, '/bad-status');
    assert.match(byUrl['/coerced']!.problem, /body\/size must be integer/);
    assert.match(byUrl['/incomplete']!.problem, /must have required property 'size'/);
    assert.equal(answers.get('/incomplete')!.statusCode, 500);
    assert.ok(answers.get('/incomplete')!.headers[VIOLATION_HEADER]);
    assert.match(byUrl['/lossy']!.problem, /changed the answer.*\/owner dropped/);
    assert.match(byUrl['/wrong-type']!.problem, /answered text\/plain, documented: application\/gzip/);
    // The answer is the one the route gave; only the header says it broke the contract.
    assert.equal(answers.get('/bad-status')!.statusCode, 409);
    assert.equal(answers.get('/coerced')!.json().size, 1);
    assert.equal(answers.get('/bad-status')!.headers[VIOLATION_HEADER], String(violations.indexOf(byUrl['/bad-status']!)));
    assert.equal(answers.get('/good')!.headers[VIOLATION_HEADER], undefined);
  });
});
